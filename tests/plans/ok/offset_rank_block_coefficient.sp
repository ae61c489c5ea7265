# expect: EQUIVALENT
# The correct twin of bugs/offset_rank_block_coefficient.sp (session 28): the model reads row
# 3*(N/8), rank 3's first row.
dim N = 1000, H = 127, A = 110
model m {
  input x : [N, H]
  y = slice(x, 0, 3 * (N / 8), 3 * (N / 8) + 1) * 2
  output y
}
plan p of m {
  mesh dp = 8
  x : [N@dp, H]
  on dp = 3 {
    output y = slice(x, 0, 0, 1) * 2 : [1, H]
  }
}
