# expect: syntax_else_without_if.sp:7:3: error: 'else' without 'if'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  else {
  }
}
