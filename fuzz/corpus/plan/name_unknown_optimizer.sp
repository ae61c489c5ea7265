# expect: name_unknown_optimizer.sp:9:9: error: unknown optimizer 'lamb' (sgd, momentum, adam, adamw)
# an optimizer shardproof does not know
dim B = 4, H = 6
model m {
  input x : [B, H]
  param w : [H, H]
  y = sum(matmul(x, w))
  output y
  train lamb(lr = 1/10)
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H]
  output y = sum(matmul(x, w)) : []
}
