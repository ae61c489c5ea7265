# expect: NOT EQUIVALENT at line 16
# Nested loops in a position (review of 2026-12-04, helper-27): i*j*13 is 13 at i = j = 1 only;
# one variable at a time saw 0. EQUIVALENT at B = 24 before; every combination is evaluated now.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 0..2 {
    for j in 0..2 {
      if i + j == 2 {
        output y = slice(x, 0, i*j*13, i*j*13+1) * 2 : [1, H]
      }
    }
  }
}
