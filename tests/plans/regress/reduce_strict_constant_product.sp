# --dims may not put a size onto a product of constants and mesh sizes under --strict-shapes:
# the plan divides a mean's sum by 2, sums over dp = 2 and divides by 2 again (by 4 in all), a
# bug at the real B = 8 that B = 4 would hide. The reducer itself picks B = 5.
# args: --strict-shapes --dims B=4
# expect: reduce_strict_constant_product.sp:6:5: error: the sizes given with --dims are not an admissible reduction (B=4): a size of 8 at the real sizes (line 14) reduces to 4, a product of mesh sizes, constants and sizes used as values that is another value at the real sizes
dim B = 8, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H] partial(sum@dp)
  s = sum(x, dim = 0) / 2
  y = all_reduce(s, sum, dp) / 2
  output y = y : [H]
}
