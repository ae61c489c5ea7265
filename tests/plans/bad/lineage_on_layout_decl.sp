# expect: lineage_on_layout_decl.sp:13:17: error: lineage on a layout declaration: 'z : [...]' is the model's 'z' itself, on the mesh; write the layout without '~'
# A '~' on a layout declaration was dropped without a word (helper-66's review, 2026-12-07):
# the declaration hands the plan the model's input itself, so there is nothing to relate.
dim B = 4, H = 4
model m {
  input x : [B, H]
  input z : [B, H]
  y = x + z
  output y
}
plan p of m {
  mesh dp = 2
  z : [B@dp, H] ~ nosuch : [B, H, H, H]
  x : [B@dp, H]
  output y = x + z : [B@dp, H]
}
