# replica_rank_holds_nothing_f2.sp: a rank whose shard of w is empty ({H, 0} split) holds no copy: the
# replica rule skips it (it refused it before: the empty range was looked for in dim 0 only, and
# a rank that read an empty shard had to declare next.w).  EQUIVALENT.
dim B = 4, H = 2
model m {
  input x : [B, H]
  param w : [H, H]
  loss = sum(matmul(x, w))
  output loss
  train sgd(lr = 1/2)
}
plan p of m {
  mesh dp = 2
  w : [H@dp{H, 0}, H]
  x : [B, H]
  wf = all_gather(w, 0, dp)
  y = matmul(x, wf)
  output loss = sum(y) : []
  g = matmul(transpose(x, 0, 1), y * 0 + 1)
  output grad.w = g : [H, H]
  on dp = 0 { output next.w = wf - g / 2 : [H, H] }
}
