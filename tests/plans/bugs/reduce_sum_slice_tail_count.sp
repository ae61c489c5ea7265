# expect: NOT EQUIVALENT at line 16
# Sums of sizes (2026-12-04): EQUIVALENT before under --dims S=5,H=12,K=7 --no-cross-check (H - S = K at those sizes only).
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
