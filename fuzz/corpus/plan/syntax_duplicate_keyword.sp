# expect: syntax_duplicate_keyword.sp:7:38: error: duplicate keyword argument 'lr'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  train adam(lr = 1e-3, beta1 = 0.9, lr = 1e-4)
}
