# expect: lineage_shape_mismatch.sp:16:18: error: 'h' has shape [2, 3] on rank (dp=0, tp=0) but the layout of 'y' gives [4, 3]
# a plan tensor whose local shape contradicts its lineage
dim B = 4, H = 4, F = 8
model m {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)
  y = relu(h)
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [B@dp, H]
  w1 : [H, F@tp]
  h = matmul(x, w1)
  output y = h : [B, F@tp]
}
