# expect: layout_split_sum.sp:13:12: error: explicit shard sizes sum to 3, the dimension has 4
# explicit shard sizes that do not add up
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
  x : [B@dp{1,2}, H]
  w1 : [H, F@tp]
  h = matmul(x, w1)
  output y = h : [B@dp, F@tp]
}
