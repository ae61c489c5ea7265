# expect: syntax_missing_name.sp:4:7: error: expected a name after 'model', found '{'
dim B = 8, H = 16, F = 64

model {
  input x : [B, H]
}
