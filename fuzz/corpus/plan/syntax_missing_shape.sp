# expect: syntax_missing_shape.sp:7:14: error: expected '[' to begin a shape, found 'F'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  param w2 : F, H
}
