# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 17
# cutoff_review_5.sp: a literal beyond 64 bits that the checked size must not divide (3 * 10^21).
# Wrong at the real mesh; the mesh cutoff once reported it EQUIVALENT (an adversarial review,
# issue 12). The cutoff now keeps the real mesh (or a checked size that cannot hide it).
dim B = 800000, H = 2

model m {
  input x : [B, H]
  y = sum(x) / 3000000000000000000000
  output y
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  y = all_reduce(sum(x), sum, dp) / (1000000000000000000000 * dp)
  output y = y : []
}
