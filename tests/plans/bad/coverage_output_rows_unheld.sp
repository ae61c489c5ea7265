# expect: coverage_output_rows_unheld.sp:13:18: error: output 'y': element [2, 0] is held by no rank that declares the output (declare it on every rank that holds a part of it)
# An output declared only inside 'on dp = 0' leaves dp = 1's rows held by no rank: they were never compared.
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
}
