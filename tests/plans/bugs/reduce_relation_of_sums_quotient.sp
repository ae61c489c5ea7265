# expect: NOT EQUIVALENT at line 33
# args: --no-cross-check
# reduce_relation_of_sums_quotient.sp: a relation among sums over a reduced dim behind a
# divisor's power (helper-67's review of session 40; docs/soundness.md "Relations among sums
# over a reduced dim"). The model divides -(3 p2^2 + 8 p1 p3 - 6 p4) by p1 twice; the plan
# writes p1^2 - 6 p2. They agree exactly when 24 e4(x) = 0, at K <= 3 only. The bound of
# src/members.c counted a term over a lower power of the divisor as multiplied by it once, not
# by the missing power (3 elements instead of 4: EQUIVALENT at K = 3); now the power counts.
dim K = 1000, O = 1
model m {
  input x : [K, O]
  p1 = sum(x, dim = 0)
  p2 = sum(x * x, dim = 0)
  p3 = sum(x * x * x, dim = 0)
  p4 = sum(x * x * x * x, dim = 0)
  b = p2 * p2
  c = p1 * p3
  c2 = c + c
  c4 = c2 + c2
  d = p4 + p4
  d6 = d + d + d
  a = b + b + b + c4 + c4 - d6
  na = p4 - p4 - a
  y = na / p1 / p1
  output y
}
plan p of m {
  mesh tp = 2
  x : [K, O]
  q1 = sum(x, dim = 0)
  q2 = sum(x * x, dim = 0)
  t = q2 + q2 + q2
  y = q1 * q1 - t - t
  output y = y : [O]
}
