# partial(sum@tp, avg@dp): dividing by 3 instead of dp = 2 is wrong
# expect: NOT EQUIVALENT at line 14
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
  b = all_reduce(a, sum, dp) / 3
  output y = b * 2 : [N]
}
