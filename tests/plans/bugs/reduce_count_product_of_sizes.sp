# A mean over F divided by a count that only the data carries: c sums a tensor of ones of shape
# [B, K], so the plan divides by B * K = 8192 where the model divides by F = 14336. Before
# 2026-12-02 the reduction chose B = 8, K = 3, F = 24 = B * K and said EQUIVALENT: it kept single
# sizes apart from products of mesh sizes and constants, but compared no product of sizes. Now
# no multiplicative relation holds among the reduced sizes that the real ones lack
# (src/reduce.c relations_kept()).  Since 2026-12-06 the failing stage's count (the sum of ones)
# sends the check to the real sizes, where H = 8 (was 4096) keeps x within the checker's element
# limit and beyond the reference executor's.
# expect: NOT EQUIVALENT at line 22
dim B = 64, K = 128, F = 14336, H = 8
model m {
  input x : [F, H]
  input w : [B, K]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh tp = 4
  x : [F@tp, H]
  w : [B@tp, K]
  c = all_reduce(sum(w * 0 + 1), sum, tp)
  y = all_reduce(sum(x, dim = 0), sum, tp) / c
  output y = y : [H]
}
