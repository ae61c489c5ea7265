# expect: name_train_unknown_argument.sp:9:25: error: unknown argument 'betta1' of adam (did you mean 'beta1'?)
# a misspelt optimizer argument is an error, not a silent default (beta1 = 9/10 would be used)
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = sum(matmul(x, w))
  output y
  train adam(lr = 1/10, betta1 = 1/2)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = sum(matmul(x, w)) : []
}
