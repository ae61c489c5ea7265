# expect: NOT EQUIVALENT at line 18
# A position handed to a user function that slices at it (review of 2026-12-04, helper-27):
# pick(x, i*13) reads row 13 for the model's row 33. EQUIVALENT at B = 24 before.
dim B = 64, H = 2048
func pick(t, p) {
  return slice(t, 0, p, p + 1) * 2
}
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 0..2 {
    if i == 1 {
      output y = pick(x, i*13) : [1, H]
    }
  }
}
