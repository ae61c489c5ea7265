# cutoff_zero_dp8.sp: a linear layer trained with SGD on dp = 8, the update sharded ZeRO-style:
# each dp rank updates the rows rank.dp*(H/dp) .. (rank.dp+1)*(H/dp) of the weight and the
# shards are all-gathered.  The slice bounds are a shard selector (member m takes chunk m, as
# a layout H@dp does), so the plan is uniform along dp and dp is checked at a smaller size
# (docs/soundness.md, "Mesh cutoff"); the reference executor re-checks all 8 ranks.
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
  nws = ws - gws / 100
  nw = all_gather(nws, 0, dp)
  output loss = loss : []
  output grad.w = gw : [H, O]
  output next.w = nw : [H, O]
}
