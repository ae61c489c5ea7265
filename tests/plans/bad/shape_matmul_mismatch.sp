# expect: shape_matmul_mismatch.sp:16:7: error: matmul: inner dimensions differ: [2, 3] and [2, 3]
# matmul of incompatible shapes: caught at the matmul, whose inner sizes H = 3 and B/dp = 2 differ
# as at the real sizes (under --fast-shapes both reduced to 2, and only the output layout caught it)
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
