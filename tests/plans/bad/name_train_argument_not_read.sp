# expect: name_train_argument_not_read.sp:9:29: error: unknown argument 'eps' of momentum (it takes lr, momentum, weight_decay, clip)
# an argument the optimizer does not read (momentum has no eps) is an error
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = sum(matmul(x, w))
  output y
  train momentum(lr = 1/10, eps = 1/100)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = sum(matmul(x, w)) : []
}
