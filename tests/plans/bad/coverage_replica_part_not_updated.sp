# expect: coverage_replica_part_not_updated.sp:15:3: error: rank (dp=0) reads 'w' but its output 'next.w' leaves part of that rank's copy out: those elements would keep the old value (declare 'next.w' on the elements each rank holds, or 'omit next.w')
# Each rank holds all of w but declares the update of its half only (a ZeRO-style update
# without the all-gather): every rank's other half stays old. Coverage of next.w holds (the
# halves make the whole), so this was EQUIVALENT.
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
  gs = slice(g, 0, rank.dp * (H/dp), (rank.dp + 1) * (H/dp))
  ws = slice(w, 0, rank.dp * (H/dp), (rank.dp + 1) * (H/dp))
  output next.w = ws - gs / 2 : [H@dp, H]
}
