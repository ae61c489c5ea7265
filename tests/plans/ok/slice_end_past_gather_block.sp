# expect: EQUIVALENT
# slice_end_past_gather_block.sp (ok): the correct twin of bugs/slice_end_past_gather_block.sp:
# the model sums the same first K rows of the gathered blocks, so the slice's order against the
# block boundary does not matter; the check goes to the real sizes where it is not kept.
dim A = 64, K = 96, N = 70000
model m {
  input x : [N]
  y = x * (A + 2 * (K - A))
  output y
}
plan p of m {
  mesh tp = 2
  x : [N@tp]
  u = expand(rank.tp + 1, [A])
  g = all_gather(u, tp, dim = 0)
  c = sum(slice(g, 0, 0, K))
  y = x * c
  output y = y : [N@tp]
}
