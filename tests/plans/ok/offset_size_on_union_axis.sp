# expect: EQUIVALENT
# The correct twin of bugs/offset_size_on_union_axis.sp (session 28): the model slices the loss
# rows at the literal 5, the plan's 4 + 1.
dim V = 16, A = 7, C = 5000, D = 6000
model m {
  input x : [V, C]
  input t : [V, D]
  l = cross_entropy(x, slice(t, 1, 0, C), reduction = none)
  y = slice(l, 0, 5, 6)
  output y
}
plan p of m {
  mesh dp = 1
  x : [V, C]
  t : [V, D]
  xs = slice(chunk(x, 4, 0, 1), 0, 1, 2)
  ts = slice(chunk(t, 4, 0, 1), 0, 1, 2)
  output y = cross_entropy(xs, slice(ts, 1, 0, C), reduction = none) : [1]
}
