# expect: NOT EQUIVALENT at line 15
# Literal positions in a reduce_scatter's pieces (review of 2026-12-04, helper-25): EQUIVALENT
# before at B = 42, where rank 1's row 19 is row 40 of the sum (really row 51).
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H]
  c = reduce_scatter(x, dp, 0)
  on dp = 1 {
    output y = slice(c, 0, 19, 20) : [1, H]
  }
}
