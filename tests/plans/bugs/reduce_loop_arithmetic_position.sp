# expect: NOT EQUIVALENT at line 14
# Arithmetic on a loop variable as a position (review of 2026-12-04, helper-26): i*(2+1) with
# i = 1 reads row 3 for the model's row 32. EQUIVALENT at B = 6 before.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 1..2 {
    output y = slice(x, 0, i*(2+1), i*(2+1)+1) * 2 : [1, H]
  }
}
