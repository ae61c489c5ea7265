# expect: NOT EQUIVALENT at line 15
# Found by an adversarial review (2026-12-04): EQUIVALENT before (minimum of a size and a literal as a value).
# a piecewise operator of a size used as a value: min(B, 10) is 10 at B = 64, B at a reduced B < 10
dim B = 64, H = 8192

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  y = x * (2 * minimum(B, 10) / B)
  output y = y : [B@dp, H]
}
