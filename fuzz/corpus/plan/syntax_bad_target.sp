# expect: syntax_bad_target.sp:7:3: error: invalid assignment target
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  relu(x) = w1
}
