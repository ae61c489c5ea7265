# expect: name_unknown_operator.sp:15:7: error: unknown operator 'matmull' (did you mean 'matmul'?)
# a misspelt operator
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
  h = matmull(x, w1)
  output y = h : [B@dp, F@tp]
}
