# The correct twin of bugs/reduce_fast_shapes_mean_over_dp.sp: the mean over an unsharded batch
# written as sum/B.  Under --fast-shapes B reduces to 2 = dp, which the default rules refuse, so
# no difference there is no proof: UNKNOWN, with the rule it misses (tests/cli.sh checks the
# text and JSON).  By default EQUIVALENT.  (The bug plan was that example until 2026-12-05; since
# sizes used as values and the mean's count are real, --fast-shapes finds its difference.)
# expect: EQUIVALENT
dim B = 8, H = 16384
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H]
  y = sum(x, dim = 0) / B
  output y = y : [H]
}
