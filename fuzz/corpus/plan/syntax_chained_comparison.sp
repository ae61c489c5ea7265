# expect: syntax_chained_comparison.sp:11:18: error: comparison operators cannot be chained
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  if 0 < rank.tp < 2 {
    y = x
  }
}
