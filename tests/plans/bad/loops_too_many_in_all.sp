# expect: loops_too_many_in_all.sp:18:3: error: loops of more than 10^6 iterations in all
# Found by a review (2026-12-04): nested loops of 1000^3 iterations hung past --timeout (each loop was under its own limit).
dim B = 8, H = 16, F = 4*H
model mlp {
  input x  : [B, H]
  param w1 : [H, F]
  h    = matmul(x, w1)
  loss = mean(h)
  output loss
}
plan p of mlp {
  mesh dp = 2
  x  : [B@dp, H]
  w1 : [H, F]
  h  = matmul(x, w1)
  for i in 0..101 {
  for j in 0..101 {
  for k in 0..101 {
  }
  }
  }
  lp = sum(h) / (B*F)
  loss = all_reduce(lp, sum, dp)
  output loss = loss : []
}
