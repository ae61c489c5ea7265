# A mean over the batch written as sum/dp: right only when the batch equals dp. With
# --strict-shapes the reduced batch stays apart from the mesh size dp = 2.
# args: --strict-shapes
# expect: NOT EQUIVALENT at line 15
dim B = 8, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  s = sum(x, dim = 0) / dp
  y = all_reduce(s, sum, dp) / dp
  output y = y : [H]
}
