# expect: name_unknown_tensor.sp:15:17: error: unknown name 'w2'
# a name used before it is defined
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
  h = matmul(x, w2)
  output y = h : [B@dp, F@tp]
}
