# expect: syntax_missing_rbracket.sp:7:19: error: expected ']', found end of line
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  param w2 : [F, H
}
