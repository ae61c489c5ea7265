# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 29
# cutoff_zero_dp8_lr.sp: the plan of tests/plans/ok/cutoff_zero_dp8.sp with the update of each
# shard scaled by 1/50 instead of the learning rate 1/100.  The plan is uniform along dp: the
# mesh cutoff checks it at a smaller dp, and the bug is found there.
dim B = 16, H = 16, O = 4

model lin {
  input x : [B, H]
  param w : [H, O]
  y = matmul(x, w)
  loss = mean(y)
  output loss
  train sgd(lr = 1/100)
}

plan lin_zero_dp8 of lin {
  mesh dp = 8
  x : [B@dp, H]
  w : [H, O]
  y = matmul(x, w)                        ~ y : [B@dp, O]
  lp = sum(y) / (B*O)
  loss = all_reduce(lp, sum, dp)
  gy = mul(y, 0) + 1/(B*O)
  gw = all_reduce(matmul(transpose(x, 0, 1), gy), sum, dp)
  gws = slice(gw, 0, rank.dp*(H/dp), (rank.dp+1)*(H/dp))
  ws = slice(w, 0, rank.dp*(H/dp), (rank.dp+1)*(H/dp))
  nws = ws - gws / 50                     # BUG: twice the learning rate
  nw = all_gather(nws, 0, dp)
  output loss = loss : []
  output grad.w = gw : [H, O]
  output next.w = nw : [H, O]
}
