# SGD with momentum and weight decay, as torch.optim.SGD: g' = g + wd*w, buf' = mu*buf + g', w' = w - lr*buf'.
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
  b = momentum.w / 2 + g + w / 4
  output next.momentum.w = b : [H, H]
  output next.w = w - b / 2 : [H, H]
}
