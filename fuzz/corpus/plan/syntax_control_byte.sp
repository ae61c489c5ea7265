# expect: syntax_control_byte.sp:7:20: error: unexpected control byte 0x07
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)
}
