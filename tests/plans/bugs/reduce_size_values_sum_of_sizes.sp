# expect: NOT EQUIVALENT at line 19
# args: --dims K=3
# reduce_size_values_sum_of_sizes.sp: two sizes used as values added by the tensor arithmetic,
# not by a size expression: x * (H/4) + x * (H/2) is 6x at the real sizes, where the model's
# x * K * 2 is 8x.  With H kept at 8 and K reduced to 3 both were 6x, and the plan was EQUIVALENT
# (the sums-of-sizes rule reads size expressions, and each product of sizes was kept apart);
# sizes written as values now take their real sizes (docs/soundness.md "Sizes as values").
dim H = 8, K = 4, N = 20000

model m {
  input x : [K, N]
  y = x * K * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [K, N@dp]
  y = x * (H/4) + x * (H/2)
  output y = y : [K, N@dp]
}
