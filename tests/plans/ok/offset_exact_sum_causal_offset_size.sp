# expect: EQUIVALENT
# The correct twin of bugs/offset_exact_sum_causal_offset_size.sp (session 28): the model's mask
# has offset 5, the plan's row 3 + 2.
dim V = 9, A = 7, H = 1000
model m {
  input x : [H, V, V]
  y = causal_softmax(slice(x, 1, 0, 1), offset = 5)
  output y
}
plan p of m {
  mesh dp = 1
  x : [H, V, V]
  b = expand(slice(x, 1, 0, 1), [H, V, V])
  c = causal_softmax(b, offset = 0)
  output y = slice(chunk(c, 3, 1, 1), 1, 2, 3) : [H, 1, V]
}
