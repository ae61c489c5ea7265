# expect: syntax_malformed_number.sp:7:26: error: malformed number '1e-'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = rmsnorm(x, w1, eps=1e-)
}
