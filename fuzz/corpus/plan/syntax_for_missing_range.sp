# expect: syntax_for_missing_range.sp:7:14: error: expected '..' in the loop range, found '{'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  for l in 2 {
  }
}
