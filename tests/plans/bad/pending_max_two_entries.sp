# expect: pending_max_two_entries.sp:12:19: error: a pending max must be the layout's only partial entry (the checker models it by one decomposition, which does not combine with other entries)
# partial(max@dp, min@tp): only the first max/min entry is tracked; after reducing it the
# min@tp entry is forgotten (the checker gave every rank x itself)
dim N = 70000
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [N] partial(max@dp, min@tp)
  r = all_reduce(x, max, dp)
  y = r * 2
  output y = y : [N]
}
