# expect: layout_unknown_axis.sp:13:10: error: unknown mesh axis 'dq'
# a layout names an axis the mesh lacks
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
  x : [B@dq, H]
  w1 : [H, F@tp]
  h = matmul(x, w1)
  output y = h : [B@dp, F@tp]
}
