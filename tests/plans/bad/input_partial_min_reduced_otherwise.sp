# expect: input_partial_min_reduced_otherwise.sp:13:18: error: 'x' holds a pending min over dp (partial(min@dp)) and is reduced otherwise here: the checker gives every rank the min itself, which is sound only if such a value is reduced (all_reduce(x, min, dp)) before any other use
# A partial(min@dp) input reduced with a sum: each rank's part is not the min, so the sum of
# parts is not dp times the value.
dim N = 4
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [N] partial(min@dp)
  y = all_reduce(x, sum, dp)
  output y = y : [N]
}
