# A correct plan whose checked sizes show a difference only the real sizes remove: the plan
# divides by a count it takes from its data (the sum of x * 0 + 1, which the checked program
# counts at the checked sizes), the model's mean by its real count (docs/soundness.md "Sizes as
# values").  The cross-check re-runs the real sizes and says EQUIVALENT; without it the stage
# difference is none of the whole plan at its real sizes, so it is UNKNOWN (it was NOT
# EQUIVALENT before 2026-12-02).  (Until 2026-12-05 this plan divided by dp twice for a batch of
# dp * dp, which the mean's real count now makes EQUIVALENT at any checked size.)
# args: --no-cross-check
# expect: UNKNOWN
dim B = 8, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  s = all_reduce(sum(x, dim = 0), sum, dp)
  c = all_reduce(sum(x * 0 + 1, dim = 0), sum, dp)
  y = s / c
  output y = y : [H]
}
