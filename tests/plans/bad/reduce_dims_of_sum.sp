# expect: reduce_dims_of_sum.sp:6:5: error: --dims S=5: 'S' keeps its real size 64 (it is used where the shape reduction does not model it: a remainder, a power, a comparison or piecewise function of sizes, a rank- or loop-dependent condition, a user function's argument, a sum of sizes, or explicit shard sizes)
# Sums of sizes (2026-12-04): --dims that put H - S onto K were taken (EQUIVALENT with --no-cross-check).
# args: --dims S=5,H=12,K=7
# reduce: the mean over the tail [S, H) of x, whose count H - S the plan writes as K; at the
# real sizes the tail has 136 elements, not K = 100 (a reduction with H - S = K passed it)
dim S = 64, H = 200, K = 100
model m {
  input x : [H]
  t = slice(x, 0, S, H)
  y = sum(t) / sum(t * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 2
  x : [H]
  t = slice(x, 0, S, H)
  output y = sum(t) / K
}
