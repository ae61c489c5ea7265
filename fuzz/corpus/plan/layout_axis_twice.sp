# expect: layout_axis_twice.sp:13:16: error: mesh axis 'dp' used twice in one layout
# one mesh axis shards two dims
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
  x : [B@dp, H@dp]
  w1 : [H, F@tp]
  h = matmul(x, w1)
  output y = h : [B@dp, F@tp]
}
