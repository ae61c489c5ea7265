# expect: syntax_lineage_target.sp:11:11: error: a lineage target must be a model tensor name, optionally indexed
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  y = x ~ relu(x) : [B@dp, H]
}
