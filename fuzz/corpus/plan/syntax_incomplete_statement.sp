# expect: syntax_incomplete_statement.sp:7:4: error: expected '=', '+=' or ':', found end of line
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h
}
