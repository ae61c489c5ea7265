# expect: syntax_missing_lbrace.sp:4:10: error: expected '{', found end of line
dim B = 8, H = 16, F = 64

model mlp
  input x : [B, H]
}
