# expect: NOT EQUIVALENT at line 15
# Found by an adversarial review (2026-12-04): EQUIVALENT before (a comparison of a size in a tensor expression).
# a comparison of a size with a literal used as a tensor value: (B > 10) is 1 at B = 64, 0 at the reduced B = 6
dim B = 64, H = 8192

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  y = x * (2 + (B > 10))
  output y = y : [B@dp, H]
}
