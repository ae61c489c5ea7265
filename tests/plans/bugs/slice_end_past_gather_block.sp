# expect: NOT EQUIVALENT at line 21
# slice_end_past_gather_block.sp (helper-39's review, session 29, find 3): the first K rows of
# an all_gather of rank blocks of A are rank 0's only where K <= A.  The plan gathers ones from
# rank 0 and twos from rank 1 and sums the first K: K at the real sizes only when K <= A; at the
# real K = 96 > A = 64 it is 64 + 64 = 128 against the model's 96.  The default reduction kept A
# (exact, its block boundary a literal position) and checked K at 3: EQUIVALENT, with N too large
# for the reference executor.  A slice's bound is now compared with the block boundaries of its
# axis (src/exec_pos.c slice_bounds_real): scaled otherwise, the real sizes are checked.
dim A = 64, K = 96, N = 70000
model m {
  input x : [N]
  y = x * K
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
