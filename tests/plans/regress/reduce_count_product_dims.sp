# --dims may not give sizes with a multiplicative relation that the real sizes lack: B = 12, K = 5
# and F = 60 = B * K, where the real F = 14336 is not 64 * 128 (the count over [B, K] below would
# stand for the mean over F). The reducer itself picks B = 12, K = 5, F = 44.
# args: --dims B=12,K=5,F=60
# expect: reduce_count_product_dims.sp:6:22: error: the sizes given with --dims are not an admissible reduction (F=60): a size of 3584 at the real sizes (line 15) reduces to 15, where the products of sizes 15 * 4 and 12 * 5 differ by a product of mesh sizes, literals and constants; at the real sizes 3584 * 4 and 64 * 128 differ by another
dim B = 64, K = 128, F = 14336, H = 4096
model m {
  input x : [F, H]
  input w : [B, K]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh tp = 4
  x : [F@tp, H]
  w : [B@tp, K]
  c = all_reduce(sum(w * 0 + 1), sum, tp)
  y = all_reduce(sum(x, dim = 0), sum, tp) / c
  output y = y : [H]
}
