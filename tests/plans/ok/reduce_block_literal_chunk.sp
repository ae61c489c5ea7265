# The right plan of bugs/reduce_block_literal_chunk.sp: row 8 of the second half of 64 rows is
# row 40. NOT EQUIVALENT before, with a counterexample only B = 42 has.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(x, 2, 0, 1)
  output y = slice(c, 0, 8, 9) * 2 : [1, H]
}
