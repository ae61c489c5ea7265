# expect: NOT EQUIVALENT at line 28
# args: --dims K=3
# fuzz: not a seed (the checker alone says EQUIVALENT: the open hole of docs/soundness.md; the cross-check's second run catches it)
# Sizes written as values that the ranks' mean adds: rank dp = 0 scales x by H/4 = 2, rank
# dp = 1 by H/2 = 4, and the output is their mean, 3 * x, where the model scales by K = 4.
# Each written size is kept apart from K, but not their mean: with K reduced to 3 both are
# 3 * x (the plan-level fuzzer's find, seed 2810; docs/soundness.md, "Open: additive
# relations of sizes used as values"; `--dims K=3` chooses that reduction, which the default
# may choose too).  z (N = 100000 elements) keeps the real sizes beyond the reference
# executor, so before session 30 the check said EQUIVALENT.  Now the reference executor's
# second run (K = 4 real, N reduced) finds the difference and the real sizes are checked.
dim H = 8, K = 4, N = 100000

model m {
  input x : [K]
  input z : [N]
  y = x * K
  u = z * 2
  output y
  output u
}

plan p of m {
  mesh dp = 2
  x : [K]
  z : [N]
  u = z * 2
  y = x * (H/4)
  on dp = 1 {
    y = x * (H/2)
  }
  output u = u : [N]
  output y = y : [K] partial(avg@dp)
}
