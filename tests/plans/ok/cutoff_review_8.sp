# cutoff_review_8.sp: the model's literal 8 is the mesh size dp = 8 (the plan divides by dp).
# Right at the real mesh; the mesh cutoff once reported it NOT EQUIVALENT or ill-formed (an
# adversarial review, issue 12). EQUIVALENT: the cutoff keeps the real mesh or falls back to it.
dim B = 16, H = 2

model m {
  input x : [B, H]
  y = sum(x) / 8
  output y
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  y = all_reduce(sum(x), sum, dp) / dp
  output y = y : []
}
