# expect: syntax_unexpected_char.sp:7:21: error: unexpected character '$'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1) $ 2
}
