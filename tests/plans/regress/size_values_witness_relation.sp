# expect: UNKNOWN
# A plan correct at its real sizes through a relation of sizes used as values that the checked
# sizes do not keep, plus a wrong lineage annotation (a spurious stage difference), at real
# sizes beyond the reference executor (131,072 elements).  The model's y = 2x * K; the plan's
# h = 4x (annotated as the model's t = 2x: wrong) and y = h * (H/2) / 2 + h = x * (H + 4), which
# is 804x = 2x * 402 at the real H = 800, K = 402 (correct end to end) but not at the checked
# sizes (H = 22, K = 7: 26x against 14x).  The stage 'h' ~ 't' fails, and so does 'y' through
# the cut; the lifting needs the reference executor at the checked sizes.  Before session 38 it
# ran them with their own values, found 26x against 14x and printed it as a witness: NOT
# EQUIVALENT for a correct plan.  Now it runs them with sizes used as values at their real sizes
# (the checker's own program: --real-values), finds the outputs equal, and the stage difference
# is no witness: UNKNOWN (docs/soundness.md, "Sizes as values", "What the reference executor
# does").
dim N = 1024, D = 128, H = 800, K = 402
model m {
  input x : [N, D]
  input e : [H, K]
  t = x * 2
  y = t * K
  f = e * 3
  output y
  output f
}
plan p of m {
  mesh dp = 2
  x : [N@dp, D]
  e : [H, K]
  h = x * 4 ~ t : [N@dp, D]
  output y = h * (H / 2) / 2 + h : [N@dp, D]
  output f = e * 3 : [H, K]
}
