# The same plan leaving w2 unchecked explicitly: EQUIVALENT, and the report names what is unchecked.
dim B = 4, H = 2
model m {
  input x : [B, H]
  param w1 : [H, H]
  param w2 : [H, H]
  h = matmul(x, w1)
  y = matmul(h, w2)
  loss = sum(y)
  output loss
  train sgd(lr = 1/2)
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w1 : [H, H]
  w2 : [H, H]
  h = matmul(x, w1)
  y = matmul(h, w2)
  output loss = all_reduce(sum(y), sum, dp) : []
  gh = matmul(y * 0 + 1, transpose(w2, 0, 1))
  g1 = all_reduce(matmul(transpose(x, 0, 1), gh), sum, dp)
  output grad.w1 = g1 : [H, H]
  output next.w1 = w1 - g1 / 2 : [H, H]
  omit grad.w2, next.w2
}
