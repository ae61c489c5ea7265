# expect: input_partial_max_array_element.sp:16:19: error: 'w[0]' holds a pending max over dp (partial(max@dp)) and is used here: the checker gives every rank the max itself, which is sound only if such a value is reduced (all_reduce(w[0], max, dp)) before any other use
# An element of a parameter array declared partial(max@dp) used directly: the rule held for plain
# names only, so w[0] escaped it and a wrong plan was EQUIVALENT (found by fuzz/diff_plan.py).
dim H = 4
model m {
  input x : [H]
  param w[2] : [H]
  y = x * w[0]
  output y
}
plan p of m {
  mesh dp = 2
  x : [H]
  w[0] : [H] partial(max@dp)
  w[1] : [H]
  output y = x * w[0] : [H]
  omit grad.w[0], grad.w[1], next.w[0], next.w[1]
}
