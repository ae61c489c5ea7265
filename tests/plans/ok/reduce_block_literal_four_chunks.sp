# The right plan of bugs/reduce_block_literal_four_chunks.sp: row 40 of the first block of 64.
dim B = 1024, H = 2
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(chunk(chunk(chunk(x, 2, 0, 0), 2, 0, 0), 2, 0, 0), 2, 0, 0)
  output y = slice(c, 0, 40, 41) * 2 : [1, H]
}
