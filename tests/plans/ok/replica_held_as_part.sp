# replica_held_as_part.sp: w held as a pending sum over dp, each rank updating its part with a
# quarter of the gradient: the parts sum to next.w.  EQUIVALENT (the replica rule accepts an
# update with the held layout's pending reductions; bugs/replica_held_as_part_lr.sp halves it).
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
  x : [B@dp, H]
  wf = all_reduce(w, sum, dp)
  y = matmul(x, wf)
  output loss = all_reduce(sum(y), sum, dp) : []
  g = all_reduce(matmul(transpose(x, 0, 1), y * 0 + 1), sum, dp)
  output grad.w = g : [H, H]
  output next.w = w - g / 4 : [H, H] partial(sum@dp)
}
