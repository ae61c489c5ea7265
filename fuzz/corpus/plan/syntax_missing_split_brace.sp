# expect: syntax_missing_split_brace.sp:11:20: error: expected '}', found ']'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  x : [B@dp{3, 5, H]
}
