# expect: lineage_on_model_input.sp:5:20: error: lineage annotations belong in plans
# A '~' on a model's input or parameter declaration was dropped without a word.
dim B = 4, H = 4
model m {
  input x : [B, H] ~ nosuch : [B]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  output y = x * 2 : [B@dp, H]
}
