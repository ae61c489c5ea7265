# expect: NOT EQUIVALENT at line 17
# The output of ok/output_split_over_on_blocks.sp with dp = 1's statement wrong: covering the
# rows by both statements together must still compare each rank's own value.
dim B = 4, H = 2
model m {
  input x : [B, H]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  on dp = 0 {
    output y = x * 2 : [B@dp, H]
  }
  on dp = 1 {
    output y = x * 3 : [B@dp, H]
  }
}
