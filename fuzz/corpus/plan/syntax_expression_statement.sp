# expect: syntax_expression_statement.sp:7:5: error: an expression statement must be a call
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  x + w1
}
