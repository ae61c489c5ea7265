# expect: syntax_bad_partial.sp:11:37: error: expected '@' after 'sum', found 'tp'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x
}

plan p of mlp {
  mesh dp = 2, tp = 2
  y = x ~ x : [B@dp, H] partial(sum tp)
}
