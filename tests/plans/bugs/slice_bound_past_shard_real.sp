# expect: NOT EQUIVALENT at line 22
# args: --dims A=5,K=3
# slice_bound_past_shard_real.sp (helper-39, session 29): rank 0 sums the first K rows of its own
# shard of w (A rows) for the model's first K rows of w: right while K <= A, but at the real
# K = 96 > A = 64 the local slice clamps to A.  A sum after the slice gives both outputs one
# shape, so the argument of docs/soundness.md "Bounds past a dim" (the shapes would differ) does
# not hold: EQUIVALENT at A = 5, K = 3 before a bound past its dim at the real sizes only sent the
# check to the real sizes (SP_CLAMP_BOUND_REAL, src/exec_pos.c slice_bounds_real).
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
  s = sum(slice(w, 0, 0, K)) * (1 - rank.tp)
  c = all_reduce(s, sum, tp)
  y = x * c
  output y = y : [N@tp]
}
