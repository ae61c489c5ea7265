# expect: NOT EQUIVALENT at line 24
# A parameter passed down three user functions, callees declared first (review of 2026-12-04,
# helper-29): two passes over the bodies missed the last level's values; the bodies are now
# collected until no call passes a new value.
dim B = 64, H = 2048
func f3(x, r) {
  return slice(x, 0, r * r, r * r + 1) * 2
}
func f2(x, q) {
  return f3(x, q)
}
func f1(x, p) {
  return f2(x, p)
}
model m {
  input x : [B, H]
  y = f1(x, 2)
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(x, 2, 0, 1)
  output y = f1(c, 1) : [1, H]
}
