# expect: coverage_output_split_rows_unheld.sp:15:18: error: output 'y': element [2, 0] is held by no rank that declares the output (declare it on every rank that holds a part of it)
# An output declared in two statements (dp = 0 and dp = 2 of four ranks) that together still
# leave the rows of dp = 1 and dp = 3 held by no declaring rank: the union of the statements
# is covered, and it is not whole.
dim B = 8, H = 2
model m {
  input x : [B, H]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 4
  x : [B@dp, H]
  on dp = 0 {
    output y = x * 2 : [B@dp, H]
  }
  on dp = 2 {
    output y = x * 2 : [B@dp, H]
  }
}
