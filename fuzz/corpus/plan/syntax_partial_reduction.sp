# expect: syntax_partial_reduction.sp:11:33: error: expected a reduction (sum, avg, max, min) in partial(...), found '@'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  y = x ~ x : [B@dp, H] partial(@tp)
}
