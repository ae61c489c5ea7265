# expect: NOT EQUIVALENT at line 22
# args: --dims K=3
# reduce_size_values_mean_across_ranks.sp: sizes used as values that a reduction over ranks adds
# (the plan-level fuzzer's find on d883190, seed 2810, mutant 6133: _default.sp is its plan).
# Rank dp = 0 scales by H/4 = 2 and dp = 1 by H/2 = 4; the output's partial(avg@dp) is their
# mean 3x, where the model scales by K = 4.  Before sizes written as values took their real
# sizes (docs/soundness.md "Sizes as values"), K checked at 3 with H kept at 8 made the mean 3 = K
# and the plan EQUIVALENT (each written size is kept apart from K, but no rule saw the sum the
# pending reduction forms).  N keeps the reference executor from the real sizes, so no
# cross-check caught it; the real sizes fit the checker, which finds the difference there.
dim H = 8, K = 4, N = 20000

model m {
  input x : [K, N]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 2
  x : [K, N]
  y = x * (H/4)
  on dp = 1 {
    y = x * (H/2)
  }
  output y = y : [K, N] partial(avg@dp)
}
