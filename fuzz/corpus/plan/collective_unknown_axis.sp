# expect: collective_unknown_axis.sp:15:38: error: 'tq' is neither a mesh axis nor a reduction
# a collective over an axis the mesh lacks
dim B = 4, H = 4, F = 8
model m {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)
  y = relu(h)
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [B@dp, H]
  w1 : [H, F@tp]
  h = all_reduce(matmul(x, w1), sum, tq)
  output y = h : [B@dp, F@tp]
}
