# expect: EQUIVALENT
# The correct twin of bugs/offset_block_literal_vs_size.sp (session 27): the model reads
# the plan's position written as a sum, so both are checked at the real sizes and agree (no
# `# args`: the twin's --dims are not admissible here).
dim B = 1000, H = 127, A = 110
model m {
  input x : [B, H]
  y = slice(x, 0, B / 4 + 3, B / 4 + 4) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  h = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = slice(h, 0, 3, 4) * 2 : [1, H]
}
