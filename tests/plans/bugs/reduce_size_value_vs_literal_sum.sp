# expect: NOT EQUIVALENT at line 25
# fuzz: not a seed (the checker alone says EQUIVALENT: the open hole of docs/soundness.md; the cross-check's second run catches it)
# A size written as a value against a sum of literals: the model scales x by K = 25, the plan
# by 2 + 3 = 5.  The reduction may check K at 5 (a prime outside the factors 2 and 3, so the
# products rule admits it), where both are 5 * x (docs/soundness.md, "Open: additive relations
# of sizes used as values": part (a) of docs/architecture.md's design is not built).  N =
# 100000 keeps the real sizes beyond the reference executor; its second run, at admissible
# sizes with the small dims real (K = 25, N reduced), finds the difference, and the real sizes
# are checked.  With --no-cross-check the check says EQUIVALENT (tests/cli.sh asserts it, so
# that closing the hole shows).  bugs/reduce_count_vs_literal_sum.sp is the count twin, which
# the checker alone catches.
dim N = 100000, K = 25

model m {
  input x : [N]
  input c : [K]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  y = x * 2 + x * 3
  output y = y : [N]
}
