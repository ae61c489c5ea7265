# expect: syntax_missing_axis.sp:11:10: error: expected a mesh axis name after '@', found '2'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  x : [B@2, H]
}
