# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 17
# cutoff_review_4.sp: a group of the cut axis with another axis whose checked size would equal a third axis's size (PP for dp*tp).
# Wrong at the real mesh; the mesh cutoff once reported it EQUIVALENT (an adversarial review,
# issue 12). The cutoff now keeps the real mesh (or a checked size that cannot hide it).
dim B = 800000, H = 2, PP = 6

model m {
  input x : [B, H]
  y = mean(x)
  output y
}

plan p of m {
  mesh dp = 8, tp = 2, pp = PP
  x : [B@(dp,tp), H]
  y = all_reduce(mean(x), sum, [dp, tp]) / PP     # WRONG: the group (dp,tp) has 16 ranks
  output y = y : []
}
