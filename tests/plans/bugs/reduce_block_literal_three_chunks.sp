# expect: NOT EQUIVALENT at line 15
# Three nested chunks of 2 (review of 2026-12-04, helper-26): blocks of B/8, rows 32..63 of a
# real B = 256, whose row 19 is row 51 for the model's row 40. EQUIVALENT at B = 168 before
# (blocks of 21) when blocks were sizes over at most two divisors; now three.
dim B = 256, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(chunk(chunk(x, 2, 0, 0), 2, 0, 0), 2, 0, 1)
  output y = slice(c, 0, 19, 20) * 2 : [1, H]
}
