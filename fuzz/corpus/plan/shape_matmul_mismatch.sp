# expect: shape_matmul_mismatch.sp:15:7: error: matmul: inner dimensions differ: [1, 2] and [1, 2]
# matmul of incompatible shapes
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
