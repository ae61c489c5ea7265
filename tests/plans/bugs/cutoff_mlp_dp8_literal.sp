# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 32
# cutoff_mlp_dp8_literal.sp: the loss averages over a hard-coded 4 ranks on a mesh of dp = 8.  The
# plan is uniform along dp, so dp is checked at a smaller size, which is never an integer of the
# program (here 3, not 4): the literal cannot stand in for the mesh size.
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
  lp = sum(y) / ((B/dp)*H)                # the mean of this rank's rows
  loss = all_reduce(lp, sum, dp) / 4      # BUG: the mean over 4 ranks, not dp = 8

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
