# expect: syntax_misplaced_keyword.sp:7:3: error: expected a statement, found 'in'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  in x
}
