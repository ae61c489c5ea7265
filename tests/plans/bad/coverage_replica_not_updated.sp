# expect: coverage_replica_not_updated.sp:15:3: error: rank (dp=1) reads 'w' but does not declare 'next.w': its copy would keep the old value (declare 'next.w' on every rank that holds it, or 'omit next.w')
# A replicated parameter updated on dp = 0 only: dp = 1 reads w for its rows but never updates
# its copy, so from the next step on the replicas differ. Coverage of next.w alone holds (dp = 0
# has every element), so this was EQUIVALENT.
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
  y = matmul(x, w)
  output loss = all_reduce(sum(y), sum, dp) : []
  g = all_reduce(matmul(transpose(x, 0, 1), y * 0 + 1), sum, dp)
  output grad.w = g : [H, H]
  on dp = 0 {
    output next.w = w - g / 2 : [H, H]
  }
}
