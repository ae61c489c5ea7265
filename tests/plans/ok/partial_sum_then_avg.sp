# Two pending entries: partial(sum@tp, avg@dp) decomposes into parts whose tp-sum of dp-averages is x
dim N = 4
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [N] partial(sum@tp, avg@dp)
  a = all_reduce(x, sum, tp)
  b = all_reduce(a, sum, dp) / 2
  output y = b * 2 : [N]
}
