# expect: syntax_non_ascii.sp:7:18: error: unexpected byte 0xe2 (non-ASCII characters are only allowed in comments)
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w₁)
}
