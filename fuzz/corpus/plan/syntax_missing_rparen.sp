# expect: syntax_missing_rparen.sp:7:19: error: expected ')', found end of line
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1
  a = relu(h)
}
