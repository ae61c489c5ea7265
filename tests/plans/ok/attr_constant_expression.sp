# attr_constant_expression.sp: an attribute written as a constant expression (issue 11 item 7:
# eps = (2*1e-5) was rejected with "expected an integer"); it is the exact rational 1/50000
dim B = 4, H = 8
model m {
  input x : [B, H]
  param w : [H]
  y = rmsnorm(x, w, eps = (2*1e-5))
  z = layernorm(x, eps = 1/(4*25000) + 1e-5)
  output y, z
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H]
  y = rmsnorm(x, w, eps = 2e-5)
  z = layernorm(x, eps = 2e-5)
  output y = y : [B@dp, H]
  output z = z : [B@dp, H]
}
