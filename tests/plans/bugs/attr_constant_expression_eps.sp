# expect: NOT EQUIVALENT at line 15
# attr_constant_expression_eps.sp: the model's eps is the constant expression (2*1e-5); the plan
# uses 1e-5, half of it
dim B = 4, H = 8
model m {
  input x : [B, H]
  param w : [H]
  y = rmsnorm(x, w, eps = (2*1e-5))
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H]
  y = rmsnorm(x, w, eps = 1e-5)
  output y = y : [B@dp, H]
}
