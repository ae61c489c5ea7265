# expect: NOT EQUIVALENT at line 16
# A loop over a size whose variable is a position, selected by if i == 13 (review of 2026-12-04,
# helper-27): EQUIVALENT at B = 24 before. The literal compared with the loop variable is a
# position, and the loop's bound keeps its real size.
dim B = 64, H = 2048, K = 32
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 0..K {
    if i == 13 {
      output y = slice(x, 0, i, i + 1) * 2 : [1, H]
    }
  }
}
