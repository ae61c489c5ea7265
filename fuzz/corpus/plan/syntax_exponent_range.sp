# expect: syntax_exponent_range.sp:7:11: error: exponent out of range in '1e5000' (limit 1000)
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  h = x * 1e5000
}
