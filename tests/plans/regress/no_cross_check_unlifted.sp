# A correct plan whose checked sizes show a difference only the real sizes remove: the batch
# really is dp * dp (so dividing by dp twice is the mean), but the reduction checks B = 2 (3 with
# --strict-shapes), where it is not. The cross-check re-runs the real sizes and says EQUIVALENT
# (ok/reduce_strict_mesh_product_real.sp); without it the stage difference names a cut symbol,
# no input of the whole plan at its real sizes, so it is UNKNOWN (it was NOT EQUIVALENT).
# args: --no-cross-check
# expect: UNKNOWN
dim B = 4, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H] partial(sum@dp)
  s = sum(x, dim = 0) / dp
  y = all_reduce(s, sum, dp) / dp
  output y = y : [H]
}
