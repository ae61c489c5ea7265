# expect: NOT EQUIVALENT at line 15
# A loop variable as a literal position (review of 2026-12-04, helper-26): inside for i in 3..4,
# slice(x, 0, i, i+1) reads row 3, the model row 32 (row 0 of chunk(x, 2, 0, 1)). EQUIVALENT at
# B = 6 before (chunk 1 starts at row 3); a loop's values in a position are literal positions.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 3..4 {
    output y = slice(x, 0, i, i+1) * 2 : [1, H]
  }
}
