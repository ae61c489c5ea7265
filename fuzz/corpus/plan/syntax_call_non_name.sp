# expect: syntax_call_non_name.sp:7:20: error: only a name can be called
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)(x)
}
