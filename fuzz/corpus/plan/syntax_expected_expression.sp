# expect: syntax_expected_expression.sp:7:22: error: expected an expression, found ')'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1 * )
}
