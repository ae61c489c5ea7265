# expect: reshape_infer_by_dim_real.sp:16:7: error: reshape: cannot reshape [80, 1000] (80000 elements) into [80, 16, -1] (-1 elements)
# args: --dims H=48
# A reshape's -1 that divides by a dim (session 26): H = 1000 is no multiple of NH = 16, so the
# real program cannot run; at the reduced H = 48 the -1 was 3 and the plan EQUIVALENT. The
# inferred extent is checked at the real sizes through the extents' monomials (src/exec.c
# inferred_whole_real): not whole there, the real sizes are checked, where the reshape fails.
dim S = 80, H = 1000, NH = 16
model m {
  input x : [S, H]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, H]
  r = reshape(x, [S, NH, -1])
  output y = reshape(r * 2, [S, H]) : [S, H]
}
