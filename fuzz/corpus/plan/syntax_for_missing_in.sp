# expect: syntax_for_missing_in.sp:7:9: error: expected 'in' after the loop variable, found '0'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  for l 0..2 {
  }
}
