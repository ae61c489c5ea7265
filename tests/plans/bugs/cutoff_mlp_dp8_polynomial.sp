# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 33
# cutoff_mlp_dp8_polynomial.sp: the loss is scaled by dp / (dp*(dp-2)), which is 1 at dp = 3 and
# 1/6 at the real dp = 8.  The mesh size inside a difference keeps the mesh cutoff off (a size
# used only as a factor cannot equal its intended value at the prime cutoff size alone), so the
# real mesh is checked and the bug is found.
dim B = 16, H = 4, F = 4

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

plan mlp_dp8_tp2 of mlp {
  mesh dp = 8, tp = 2
  x  : [B@dp, H]
  w1 : [H, F@tp]                          # column-parallel
  w2 : [F@tp, H]                          # row-parallel

  # forward
  h  = matmul(x, w1)                      ~ h : [B@dp, F@tp]
  a  = relu(h)
  yp = matmul(a, w2)                      ~ y : [B@dp, H] partial(sum@tp)
  y  = all_reduce(yp, sum, tp)            ~ y : [B@dp, H]
  lp = sum(y) / (B*H)                     # this rank's share of mean(y)
  loss = all_reduce(lp, sum, dp) * dp / (dp*(dp-2))   # BUG: 1 at dp = 3 only

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
