# expect: lineage_no_output.sp:11:1: error: plan 'p' declares no output: nothing would be proven
# a plan that declares no output
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
  h = matmul(x, w1)
}
