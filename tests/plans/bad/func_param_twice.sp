# expect: func_param_twice.sp:3:11: error: parameter 'x' is named twice
# Found by a review (2026-12-04): a function with two parameters of one name (the last won).
func f(x, x) {
  return x
}
dim B = 8, H = 16, F = 4*H
model mlp {
  input x  : [B, H]
  param w1 : [H, F]
  h    = f(matmul(x, w1), x)
  loss = mean(h)
  output loss
}
plan p of mlp {
  mesh dp = 2
  x  : [B@dp, H]
  w1 : [H, F]
  h  = matmul(x, w1)
  lp = sum(h) / (B*F)
  loss = all_reduce(lp, sum, dp)
  output loss = loss : []
}
