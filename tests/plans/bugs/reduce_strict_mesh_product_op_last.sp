# find H with the collective's op written after its axis (all_reduce(dp, dp, sum), as the checker and
# the reference executor both read it): the reduction reads the op wherever it stands, so the
# reduced batch stays apart from dp * dp = 4 (a plan-level fuzzer mutant of the plan beside).
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
  s = sum(x, dim = 0) / all_reduce(dp, dp, sum)
  y = all_reduce(s, sum, dp) / dp
  output y = y : [H]
}
