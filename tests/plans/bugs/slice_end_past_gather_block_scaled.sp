# expect: NOT EQUIVALENT at line 19
# args: --dims A=5,K=3
# slice_end_past_gather_block_scaled.sp (helper-39, session 29): the same without constants:
# rank 1's block of w is doubled before the gather, and the first K rows reach it at the real
# sizes only (K = 96 > A = 64; checked A = 5, K = 3).  EQUIVALENT before slice_bounds_real.
dim A = 64, K = 96, W = 2*A, N = 70000
model m {
  input x : [N]
  input w : [W]
  y = x * sum(slice(w, 0, 0, K))
  output y
}
plan p of m {
  mesh tp = 2
  x : [N@tp]
  w : [W@tp]
  g = all_gather(w * (1 + rank.tp), tp, dim = 0)
  c = sum(slice(g, 0, 0, K))
  y = x * c
  output y = y : [N@tp]
}
