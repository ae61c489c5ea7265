# cutoff_review_9.sp: a group size written as a product of literals (2*4 for dp = 8).
# Right at the real mesh; the mesh cutoff once reported it NOT EQUIVALENT or ill-formed (an
# adversarial review, issue 12). EQUIVALENT: the cutoff keeps the real mesh or falls back to it.
dim B = 16, H = 2

model m {
  input x : [B, H]
  y = mean(x)
  output y
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  y = all_reduce(mean(x), sum, dp) / (2*4)
  output y = y : []
}
