# first_broken.sp: first.sp (docs/tutorial.md) with the gradient all-reduce forgotten.
dim B = 8, H = 4

model linear {
  input x : [B, H]
  param w : [H, H]
  y    = matmul(x, w)
  loss = mean(y)
  output loss
  train sgd(lr = 1/10)
}

plan dp2 of linear {
  mesh dp = 2
  x : [B@dp, H]                       # each rank holds half of the batch
  w : [H, H]                          # the weight is replicated
  y  = matmul(x, w)
  lp = sum(y) / (B*H)                 # this rank's share of mean(y)
  loss = all_reduce(lp, sum, dp)
  # backward: d loss / d y = 1/(B*H) everywhere, d loss / d w = x^T (d loss / d y)
  gy = mul(y, 0) + 1/(B*H)
  gw = matmul(transpose(x, 0, 1), gy)
  output loss = loss : []
  output grad.w = gw : [H, H]
  output next.w = w - gw / 10 : [H, H]
}
# expect: NOT EQUIVALENT at line 22
