# The plan-level fuzzer's find (seed 4100, mutant 1149, on baf8a55; also on d67d9e3): the
# relation of bugs/reduce_relation_of_sums_quotient.sp with the plan's output declared
# partial(max@tp). The stage combined the ranks' copies of y into max(y, y), an atom of a sum
# over K, which src/members.c takes as holding no element, so the dim went untested and the
# checker alone said EQUIVALENT at K = 3. The max of copies of one value is now that value
# (src/mesh.c), and the bound finds the fourth element.
# args: --no-cross-check
# expect: NOT EQUIVALENT at line 33
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
  q1 = (sum(x, dim = 0)) + 1/2 - 1/2
  q2 = sum(x * x, dim = 0)
  t = q2 + q2 + q2
  y = q1 * q1 - t - t
  output y = y : [O] partial(max@tp)
}
