# A mean over an unsharded batch written as sum/dp: right only when the batch equals dp = 2.
# The real sizes are too large for the reference executor (B*H = 8 * 16384 elements), so only
# the reduction stands between this plan and EQUIVALENT. Before 2026-12-02 the default
# reduction let B reduce to 2 = dp and printed EQUIVALENT; the default now keeps every size
# apart from mesh sizes (B = 4). --fast-shapes: no difference at its sizes, UNKNOWN with
# --no-cross-check, else the reference executor's second run (B = 8) finds it (tests/cli.sh).
# expect: NOT EQUIVALENT at line 17
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
