# expect: NOT EQUIVALENT at line 24
# fuzz: not a seed (with --no-cross-check the checker alone says UNKNOWN: its difference is at the checked sizes only)
# A size written as a value against a sum of literals: the model scales x by K = 25, the plan
# by 2 + 3 = 5.  The reduction may check K at 5 (a prime outside the factors 2 and 3, so the
# products rule admits it), where both were 5 * x until 2026-12-06 (a wrong EQUIVALENT with
# --no-cross-check).  The checked program now takes K at its real size (docs/soundness.md,
# "Sizes as values") and differs (5 * x against 25 * x); N = 100000 keeps the real sizes beyond
# the reference executor, which at the checked sizes takes K = 5 and agrees, so the real sizes
# are checked and show the difference (tests/cli.sh; with --no-cross-check UNKNOWN).
# bugs/reduce_count_vs_literal_sum.sp is the count twin, caught by the count test.
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
