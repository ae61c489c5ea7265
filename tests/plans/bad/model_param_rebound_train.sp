# expect: model_param_rebound_train.sp:15:3: error: 'w' is an input or parameter of the model and is assigned here: a model does not change what it is given (name the new value otherwise: h1 = f(h))
# Found by an adversarial review (2026-12-04): EQUIVALENT before (the plan's declaration of the
# name got the model's rebound value, a value the model computes; train's grad and update too).
# Training variant: the model scales its parameter before use (`w, n = wscale(w)`, a weight
# normalisation written in the loop style).  The plan declares w and skips the scaling; it is
# handed the model's rebound w (3w), so loss, grad.w and next.w all "match".  Really the plan's
# loss is 1/3 of the model's and next.w misses the factor.
dim B = 300, H = 256
func wscale(w) {
  return w * 3, sum(w)
}
model m {
  input x : [B, H]
  param w : [H, H]
  w, n = wscale(w)
  y = matmul(x, w)
  loss = sum(y)
  output loss
  train sgd(lr = 1/2)
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H, H]
  y = matmul(x, w)
  output loss = all_reduce(sum(y), sum, dp) : []
  g = all_reduce(matmul(transpose(x, 0, 1), y * 0 + 1), sum, dp)
  output grad.w = g : [H, H]
  output next.w = w - g / 2 : [H, H]
}
