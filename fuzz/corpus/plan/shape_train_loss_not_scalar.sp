# expect: shape_train_loss_not_scalar.sp:9:3: error: the loss 'y' must be a scalar
# train with a non-scalar loss
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = matmul(x, w)
  output y
  train sgd(lr = 1/10)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = matmul(x, w) : [B, H]
}
