# expect: coverage_replica_rebound_on_some_ranks.sp:15:3: error: rank (dp=1) reads 'w' but does not declare 'next.w': its copy would keep the old value (declare 'next.w' on every rank that holds it, or 'omit next.w')
# Rebinding w on dp = 0 only (`on dp = 0 { w = w }`) reset the binding's record of reads for
# every rank, so dp = 1's later read of its copy went unrecorded and its stale replica passed
# (EQUIVALENT before): a rank that gets no new value keeps the old one and what it is.
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
  w : [H, H]
  x : [B@dp, H]
  on dp = 0 { w = w }
  y = matmul(x, w)
  output loss = all_reduce(sum(y), sum, dp) : []
  g = all_reduce(matmul(transpose(x, 0, 1), y * 0 + 1), sum, dp)
  output grad.w = g : [H, H]
  on dp = 0 {
    output next.w = w - g / 2 : [H, H]
  }
}
