# expect: name_train_positional_argument.sp:9:13: error: the arguments of sgd are keywords (sgd(lr = ...))
# a positional optimizer argument would be ignored: it is an error
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = sum(matmul(x, w))
  output y
  train sgd(1/10)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = sum(matmul(x, w)) : []
}
