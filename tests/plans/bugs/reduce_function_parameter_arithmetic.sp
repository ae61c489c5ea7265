# expect: NOT EQUIVALENT at line 17
# A user function's parameter in position arithmetic (p*p - 1 with pick(x, 2); review of
# 2026-12-04, helper-28): row 3 stood for the model's row B/2 = 128 at B = 6. A parameter
# takes the values its calls pass.
dim B = 256, H = 2048
func pick(t, p) {
  return slice(t, 0, p*p - 1, p*p) * 2
}
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  output y = pick(x, 2) : [1, H]
}
