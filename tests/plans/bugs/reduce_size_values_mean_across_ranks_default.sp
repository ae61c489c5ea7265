# expect: NOT EQUIVALENT at line 20
# reduce_size_values_mean_across_ranks_default.sp: the plan-level fuzzer's find on d883190 (seed
# 2810, mutant 6133) as it was found, with the default reduction: K = 4 reduced to 3 with H = 8
# kept, the ranks' H/4 and H/2 averaged by partial(avg@dp) to 3 = K.  The proof said EQUIVALENT
# and the reference executor's cross-check at the real sizes found the difference (exit 4, an
# internal error); sizes written as values now take their real sizes (docs/soundness.md "Sizes
# as values"), so the proof itself finds it.  bugs/reduce_size_values_mean_across_ranks.sp is the
# same hole where no cross-check can run.
dim H = 8, K = 4

model m {
  input x : [K]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 2
  x : [K]
  y = x * (H/4)
  on dp = 1 {
    y = x * (H/1/2)
  }
  output y = y : [K] partial(avg@dp)
}
