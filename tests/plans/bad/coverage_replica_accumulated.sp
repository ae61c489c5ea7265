# expect: coverage_replica_accumulated.sp:14:3: error: rank (dp=1) reads 'w' but does not declare 'next.w': its copy would keep the old value (declare 'next.w' on every rank that holds it, or 'omit next.w')
# `w += 0` reads w's old value on every rank; the accumulation did not record the read, and
# the rebinding reset the record, so dp = 1's stale replica passed (EQUIVALENT before).
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
  w += 0
  y = matmul(x, w)
  output loss = all_reduce(sum(y), sum, dp) : []
  g = all_reduce(matmul(transpose(x, 0, 1), y * 0 + 1), sum, dp)
  output grad.w = g : [H, H]
  on dp = 0 {
    output next.w = w - g / 2 : [H, H]
  }
}
