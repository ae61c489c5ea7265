# expect: syntax_trailing_tokens.sp:7:21: error: expected end of statement, found 'w1'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1) w1
}
