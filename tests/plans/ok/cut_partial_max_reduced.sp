# The same with the max all-reduced before use: EQUIVALENT.
dim B = 2, V = 8
model m {
  input x : [B, V]
  mx = amax(x, dim = 1, keepdim = 1)
  y = exp(x - mx)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, V@tp]
  m1 = amax(x, dim = 1, keepdim = 1) ~ mx : [B, 1] partial(max@tp)
  mg = all_reduce(m1, max, tp)
  y = exp(x - mg)
  output y = y : [B, V@tp]
}
