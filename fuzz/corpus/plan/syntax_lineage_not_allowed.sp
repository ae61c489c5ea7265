# expect: syntax_lineage_not_allowed.sp:11:12: error: a lineage annotation '~' is not allowed on this statement
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  output y ~ x : [B@dp, H]
}
