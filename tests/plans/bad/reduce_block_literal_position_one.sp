# expect: reduce_block_literal_position_one.sp:5:5: error: the sizes given with --dims are not an admissible reduction (B=7): a block of 3 elements at the real sizes (line 13, divided by 4) has 1 at the reduced ones, not above the literal position 1
# args: --dims B=7
# Positions 0 and 1 (session 25): chunk 1's row 0 is row s of the whole, so a one-element block
# at the reduced sizes only would put it at the model's row 1. The block rule covered L >= 2.
dim B = 12, H = 2
model m {
  input x : [B, H]
  y = slice(chunk(x, 3, 0, 1), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  output y = slice(chunk(x, 4, 0, 1), 0, 0, 1) * 2 : [1, H]
}
