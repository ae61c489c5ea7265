# An output whose ranks declare it in two statements: dp = 0 in one 'on' block, dp = 1 in
# another. Together they hold every row. Before 2026-12-04 each statement was covered on its own
# and refused for the rows the other holds (a false refusal of the coverage check).
dim B = 4, H = 2
model m {
  input x : [B, H]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  on dp = 0 {
    output y = x * 2 : [B@dp, H]
  }
  on dp = 1 {
    output y = x + x : [B@dp, H]
  }
}
