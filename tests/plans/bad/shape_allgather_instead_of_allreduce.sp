# expect: shape_allgather_instead_of_allreduce.sp:36:9: error: matmul: inner dimensions differ: [4, 6] and [3, 3]
# the row-parallel all_reduce replaced by an all_gather: the shapes no longer fit
# mlp.sp: a two-layer MLP trained with SGD, and its Megatron-style plan on DP=2 x TP=2:
# the first linear is column-parallel, the second row-parallel, gradients all-reduced over dp.

dim B = 8, H = 16, F = 32

model mlp {
  input x  : [B, H]
  param w1 : [H, F]
  param w2 : [F, H]
  h    = matmul(x, w1)
  a    = relu(h)
  y    = matmul(a, w2)
  loss = mean(y)
  output loss
  train sgd(lr = 1/64)
}

plan mlp_dp2_tp2 of mlp {
  mesh dp = 2, tp = 2
  x  : [B@dp, H]
  w1 : [H, F@tp]                          # column-parallel
  w2 : [F@tp, H]                          # row-parallel

  # forward
  h  = matmul(x, w1)                      ~ h : [B@dp, F@tp]
  a  = relu(h)
  yp = matmul(a, w2)                      ~ y : [B@dp, H] partial(sum@tp)
  y  = all_gather(yp, 1, tp)
  lp = sum(y) / (B*H)                     # this rank's share of mean(y)
  loss = all_reduce(lp, sum, dp)

  # backward: d mean(y) / dy = 1/(B*H) everywhere
  gy  = mul(y, 0) + 1/(B*H)
  ga  = matmul(gy, transpose(w2, 0, 1))
  gw2 = all_reduce(matmul(transpose(a, 0, 1), gy), sum, dp)
  gh  = where(gt(h, 0), ga, 0)
  gw1 = all_reduce(matmul(transpose(x, 0, 1), gh), sum, dp)
  gx  = all_reduce(matmul(gh, transpose(w1, 0, 1)), sum, tp)

  # SGD step
  nw1 = w1 - gw1 / 64
  nw2 = w2 - gw2 / 64

  output loss = loss : []
  output grad.x = gx : [B@dp, H]
  output grad.w1 = gw1 : [H, F@tp], grad.w2 = gw2 : [F@tp, H]
  output next.w1 = nw1 : [H, F@tp], next.w2 = nw2 : [F@tp, H]
}
