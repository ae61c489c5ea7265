# expect: syntax_plan_missing_of.sp:8:8: error: expected 'of' after the plan name, found 'mlp'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
}

plan p mlp {
  mesh dp = 2
}
