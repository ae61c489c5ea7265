# expect: NOT EQUIVALENT at line 20
# Found by an adversarial review (2026-12-04): EQUIVALENT before (a slice clamped at the reduced sizes only).
# relative order of two sizes is not kept: slice bounds S, H with real S < H, reduced S > H
dim S = 64, H = 65600

model m {
  input x : [H]
  input z : [S]
  y = x * 1
  w = z * 1
  output y, w
}

plan p of m {
  mesh dp = 4
  x : [H]
  z : [S@dp]
  a = slice(x, 0, 0, S)
  b = slice(x, 0, S, H)
  y = concat(a, 2 * b, dim = 0)
  w = z * 1
  output y = y : [H]
  output w = w : [S@dp]
}
