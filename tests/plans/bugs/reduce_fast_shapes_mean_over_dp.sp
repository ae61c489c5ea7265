# A mean over an unsharded batch written as sum/dp: right only when the batch equals dp = 2.
# The real sizes are too large for the reference executor (B*H = 8 * 16384 elements), so only
# the reduction stands between this plan and EQUIVALENT. Before 2026-12-02 the default
# reduction let B reduce to 2 = dp and printed EQUIVALENT; the default now keeps every size
# apart from mesh sizes (B = 4). Under --fast-shapes the same sizes as before gave no
# difference and the verdict was UNKNOWN; since 2026-12-06 the mean divides by the real count
# of B (docs/soundness.md "Sizes as values"), so --fast-shapes finds the difference too
# (tests/cli.sh; ok/reduce_fast_shapes_mean_written.sp is now the no-proof example).
# expect: NOT EQUIVALENT at line 19
dim B = 8, H = 16384
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H]
  y = sum(x, dim = 0) / dp
  output y = y : [H]
}
