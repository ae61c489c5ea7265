# expect: syntax_lineage_missing_colon.sp:11:13: error: expected ':' after the lineage target, found '='
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  y = x ~ x = [B@dp, H]
}
