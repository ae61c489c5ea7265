# cutoff_review_10.sp: a reshape whose literal factors multiply to the mesh size (well-formed at dp = 8 only).
# Right at the real mesh; the mesh cutoff once reported it NOT EQUIVALENT or ill-formed (an
# adversarial review, issue 12). EQUIVALENT: the cutoff keeps the real mesh or falls back to it.
dim B = 16, H = 2

model m {
  input x : [B, H]
  y = sum(x)
  output y
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  xg = all_gather(x, 0, dp)
  y = sum(reshape(xg, [2, 4*(B/dp), H]))
  output y = y : []
}
