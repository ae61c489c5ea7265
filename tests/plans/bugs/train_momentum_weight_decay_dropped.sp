# momentum's weight decay left out of the plan's update (the checker ignored weight_decay for momentum)
# expect: NOT EQUIVALENT at line 21
dim B = 4, H = 2
model m {
  input x : [B, H]
  param w : [H, H]
  y = matmul(x, w)
  loss = sum(y)
  output loss
  train momentum(lr = 1/2, momentum = 1/2, weight_decay = 1/4)
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H, H]
  momentum.w : [H, H]
  y = matmul(x, w)
  output loss = all_reduce(sum(y), sum, dp) : []
  g = all_reduce(matmul(transpose(x, 0, 1), y * 0 + 1), sum, dp)
  output grad.w = g : [H, H]
  b = momentum.w / 2 + g + 0 * w
  output next.momentum.w = b : [H, H]
  output next.w = w - b / 2 : [H, H]
}
