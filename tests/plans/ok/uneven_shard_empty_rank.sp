# Found by a review (2026-12-04): a rank holding an empty shard (B@dp{8,0}) summed no element in the
# reference executor, a memcpy from NULL under UBSan (the ASan build exited 1).
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
  x  : [B@dp{8,0}, H]
  w1 : [H, F]
  h  = matmul(x, w1)
  lp = sum(h) / (B*F)
  loss = all_reduce(lp, sum, dp)
  output loss = loss : []
}
