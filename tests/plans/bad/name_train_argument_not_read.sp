# expect: name_train_argument_not_read.sp:9:29: error: unknown argument 'weight_decay' of momentum (it takes lr, momentum, clip)
# an argument the optimizer does not read (momentum has no weight decay here) is an error
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = sum(matmul(x, w))
  output y
  train momentum(lr = 1/10, weight_decay = 1/100)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = sum(matmul(x, w)) : []
}
