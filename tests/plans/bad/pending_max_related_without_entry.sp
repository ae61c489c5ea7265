# expect: pending_max_related_without_entry.sp:13:9: error: 'x' holds a pending max over tp (partial(max@tp)) and is related under a layout without that entry: the checker gives every rank the max itself, which is sound only if such a value is reduced (all_reduce(x, max, tp)) before any other use
# A pending max input cut under a layout WITHOUT the pending entry
dim N = 70000
model m {
  input x : [N]
  t = x * 1
  y = t * 2
  output y
}
plan p of m {
  mesh tp = 2
  x : [N] partial(max@tp)
  t = x ~ t : [N]
  y = t * 2
  output y = y : [N]
}
