# A mean over the batch divided by a product of mesh sizes that a collective builds: the sum over
# dp of dp is dp * dp = 4, right only when the batch is 4 (it is 8). With --strict-shapes the
# reduced batch stays apart from that value too (found by the plan-level fuzzer, find H).
# args: --strict-shapes
# expect: NOT EQUIVALENT at line 16
dim B = 8, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H]
  s = sum(x, dim = 0) / all_reduce(dp, sum, dp)
  y = all_reduce(s, sum, dp) / dp
  output y = y : [H]
}
