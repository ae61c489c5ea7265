# expect: coverage_replica_updated_as_part.sp:16:3: error: rank (dp=0) holds 'w' as [2, 2] but its output 'next.w' has other pending reductions: its next copy would be another kind of value (a part for a whole copy, or the other way; declare 'next.w' with the held layout's pending reductions, or 'omit next.w')
# A replicated w whose update is declared as a pending sum: each rank's next copy would be its
# part (dp = 1's is 0), not next.w, so the replicas go stale or disagree.  The rule compared
# boxes only (EQUIVALENT before); the declared update must have the held layout's pending
# reductions.
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
  on dp = 0 { nw = w - g / 2 }
  on dp = 1 { nw = w * 0 }
  output next.w = nw : [H, H] partial(sum@dp)
}
