# expect: cut_partial_max_used_unreduced.sp:15:15: error: 'm1' holds a pending max over tp (partial(max@tp)) and is used here: the checker gives every rank the max itself, which is sound only if such a value is reduced (all_reduce(m1, max, tp)) before any other use
# A vocab-parallel log-softmax shifted by each rank's own max: with the max annotated
# partial(max@tp), the checker modelled every rank holding the global max and accepted it.
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
  y = exp(x - m1)
  output y = y : [B, V@tp]
}
