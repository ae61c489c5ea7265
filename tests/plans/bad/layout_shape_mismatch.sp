# expect: layout_shape_mismatch.sp:13:7: error: layout shape [4, 6] does not match model tensor 'x' of shape [4, 3]
# a layout whose shape is not the model tensor's
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
  x : [B@dp, F]
  w1 : [H, F@tp]
  h = matmul(x, w1)
  output y = h : [B@dp, F@tp]
}
