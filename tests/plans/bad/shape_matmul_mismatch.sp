# expect: shape_matmul_mismatch.sp:16:18: error: 'h' has shape [2, 2] on rank (dp=0, tp=0) but the layout of 'y' gives [2, 3]
# matmul of incompatible shapes (B/dp and H both reduce to 2: the output layout catches it first)
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
  h = matmul(x, x)
  output y = h : [B@dp, F@tp]
}
