# The count over [B, K] is F's size when F = B * K: a relation of the real sizes, which the
# reduction keeps (tests/plans/bugs/reduce_count_product_of_sizes.sp is the same plan with F
# unrelated to B and K). Since 2026-12-06 the sum of ones is a count (its terms share the
# monomial 1: docs/soundness.md, "Counts"), so the proof is made at the real sizes, small here.
dim B = 8, K = 16, H = 8
dim F = B * K
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
