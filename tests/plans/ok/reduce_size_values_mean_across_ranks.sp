# expect: EQUIVALENT
# args: --no-infer-lineage
# reduce_size_values_mean_across_ranks.sp: the correct twin of
# bugs/reduce_size_values_mean_across_ranks.sp: ranks scale by H/4 = 2 and 3*H/4 = 6, whose mean
# 4 is the model's K at the real sizes.  Sizes used as values are checked at their real sizes
# (docs/soundness.md "Sizes as values"), so this holds at any reduced shapes.
dim H = 16, K = 8, N = 20000

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
    y = x * (3*H/4)
  }
  output y = y : [K, N] partial(avg@dp)
}
