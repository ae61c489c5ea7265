# expect: name_unknown_attribute.sp:14:21: error: rmsnorm: unknown attribute 'epsilon' (did you mean 'eps'?)
# an unknown keyword attribute of an operator is an error at its keyword, with a suggestion
dim B = 4, H = 8
model m {
  input x : [B, H]
  param w : [H]
  y = rmsnorm(x, w, eps = 1e-5)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H]
  y = rmsnorm(x, w, epsilon = 1e-5)
  output y = y : [B@dp, H]
}
