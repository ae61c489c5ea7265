# expect: syntax_return_outside_func.sp:7:3: error: 'return' is only allowed in a function body
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  return x
}
