# expect: syntax_positional_after_keyword.sp:7:23: error: positional argument after keyword argument
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  s = sum(x, dim = 1, 2)
}
