# expect: coverage_replica_part_updated_whole.sp:15:3: error: rank (dp=0) holds 'w' as [2, 2] partial(sum@dp) but its output 'next.w' has other pending reductions: its next copy would be another kind of value (a part for a whole copy, or the other way; declare 'next.w' with the held layout's pending reductions, or 'omit next.w')
# w held as a pending sum over dp (each rank a part) was exempt from the rule: dp = 1 declared
# next.w on an empty box, so its part was never updated and the parts no longer sum to next.w
# (EQUIVALENT before).
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
  w : [H, H] partial(sum@dp)
  x : [B, H]
  wf = all_reduce(w, sum, dp)
  y = matmul(x, wf)
  output loss = sum(y) : []
  g = matmul(transpose(x, 0, 1), y * 0 + 1)
  output grad.w = g : [H, H]
  output next.w = slice(wf - g / 2, 0, rank.dp * H, H) : [H@dp{2,0}, H]
}
