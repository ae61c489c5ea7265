# expect: omit_and_output.sp:17:3: error: 'loss' is output here and named in 'omit': a plan either checks a model output or leaves it out
# Found by a review (2026-12-04): a name both omitted and output (the report said both).
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
  lp = sum(h) / (B*F)
  loss = all_reduce(lp, sum, dp)
  omit loss
  output loss = loss : []
}
