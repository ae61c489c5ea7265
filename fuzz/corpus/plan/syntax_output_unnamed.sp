# expect: syntax_output_unnamed.sp:7:10: error: an output must be named: use 'output NAME' or 'output NAME = EXPR'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  output relu(x)
}
