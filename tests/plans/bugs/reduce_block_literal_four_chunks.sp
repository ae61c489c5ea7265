# expect: NOT EQUIVALENT at line 16
# Four nested chunks of 2 (session 25): blocks of B/16, rows 64..127 of a real B = 1024, whose
# row 19 is row 83, not the model's row 40. EQUIVALENT before, by default: the block rule
# divided sizes by at most three divisors, and B = 336 made blocks of 21 (19 + 21 = 40). Now a
# size is divided by as many divisors as the program has cutting operators.
dim B = 1024, H = 2
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(chunk(chunk(chunk(x, 2, 0, 0), 2, 0, 0), 2, 0, 0), 2, 0, 1)
  output y = slice(c, 0, 19, 20) * 2 : [1, H]
}
