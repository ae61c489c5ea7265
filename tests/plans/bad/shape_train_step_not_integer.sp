# expect: shape_train_step_not_integer.sp:9:9: error: 'step' of adam must be a positive integer of at most 10^6
# Adam's bias correction needs an integer step (1/2 was read as its numerator)
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = sum(matmul(x, w))
  output y
  train adam(lr = 1/10, step = 1/2)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = sum(matmul(x, w)) : []
}
