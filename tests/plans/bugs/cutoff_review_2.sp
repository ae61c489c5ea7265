# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 20
# cutoff_review_2.sp: a hard-coded chunk count indexing chunks i*(B/dp) of a gathered tensor (slice bounds past the end at a small dp clamp silently).
# Wrong at the real mesh; the mesh cutoff once reported it EQUIVALENT (an adversarial review,
# issue 12). The cutoff now keeps the real mesh (or a checked size that cannot hide it).
dim B = 800000, H = 2

model m {
  input x : [B, H]
  y = sum(x)
  output y
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  xg = all_gather(x, 0, dp)
  acc = sum(slice(xg, 0, 0, B/dp))
  for i in 1..4 {
    acc += sum(slice(xg, 0, i*(B/dp), (i+1)*(B/dp)))
  }
  output y = acc : []
}
