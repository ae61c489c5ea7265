# expect: UNKNOWN: limit max-elements
# The count over [B, K] is F's size when F = B * K: a relation of the real sizes, which the
# reduction keeps (tests/plans/bugs/reduce_count_product_of_sizes.sp is the same plan with F
# unrelated to B and K).  A correct plan, EQUIVALENT until 2026-12-05 (in ok/ then); since the
# model's mean divides by its real count (docs/soundness.md "Sizes as values"), the plan's count
# taken from its data (the sum of w * 0 + 1, counted at the checked sizes) differs at the checked
# sizes, the reference executor cannot run the real ones, and the real sizes are too large for
# the checker: UNKNOWN with the limit's name, the known cost of a count from data.
dim B = 64, K = 128, H = 4096
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
