# expect: syntax_decl_missing_colon.sp:7:18: error: expected ':', found end of line
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  param w2 [F, H]
}
