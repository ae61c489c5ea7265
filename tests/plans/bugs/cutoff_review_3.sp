# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 26
# cutoff_review_3.sp: the mesh size passed to a function, compared and used in a difference there.
# Wrong at the real mesh; the mesh cutoff once reported it EQUIVALENT (an adversarial review,
# issue 12). The cutoff now keeps the real mesh (or a checked size that cannot hide it).
dim B = 800000, H = 2

func total(xl, n) {
  s = all_reduce(sum(xl), sum, dp)
  if n < 5 {
    return s
  } else {
    return s * (n - 1) / n
  }
}

model m {
  input x : [B, H]
  y = sum(x)
  output y
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  y = total(x, dp)
  output y = y : []
}
