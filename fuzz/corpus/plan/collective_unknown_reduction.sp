# expect: collective_unknown_reduction.sp:15:33: error: 'prod' is neither a mesh axis nor a reduction
# a collective with an unknown reduction
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
  h = all_reduce(matmul(x, w1), prod, tp)
  output y = h : [B@dp, F@tp]
}
