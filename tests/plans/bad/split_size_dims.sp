# expect: split_size_dims.sp:5:5: error: the sizes given with --dims are not an admissible reduction (B=15): a size of 80 at the real sizes (line 13) makes 3 pieces of 30 there, the last partial, and 3 at the reduced ones, the last whole
# args: --dims B=15,K=5
# A split's piece size that is a size (review of 2026-12-04, helper-30): --dims B=15,K=5 made
# piece 2 whole (5 rows) where the real B = 80 split by K = 30 leaves 20; the plan divides by K.
dim B = 80, K = 30, H = 2048
model m {
  input x : [B, H]
  y = mean(split(x, size = K, dim = 0, index = 2), dim = 0)
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  output y = sum(split(x, size = K, dim = 0, index = 2), dim = 0) / K : [H]
}
