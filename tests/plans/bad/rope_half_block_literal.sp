# expect: rope_half_block_literal.sp:5:15: error: the sizes given with --dims are not an admissible reduction (D=24): a block of 64 elements at the real sizes (line 15, divided by 2) has 12 at the reduced ones, not above the literal position 14
# args: --dims D=24
# rope pairs column i with i + D/2, a block the program does not write (review of 2026-12-04,
# helper-28): with --dims D=24 column 13 stood for the model's column 65. Rope cuts in halves.
dim S = 2048, D = 128
model m {
  input x : [S, D]
  input c : [S, D]
  input s : [S, D]
  y = slice(rope(x, c, s), 1, 1, 2)
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, D]
  c : [S, D]
  s : [S, D]
  output y = slice(x, 1, 1, 2) * slice(c, 1, 1, 2) - slice(x, 1, 13, 14) * slice(s, 1, 1, 2) : [S, 1]
}
