# expect: NOT EQUIVALENT at line 21
# A model function whose local h is named like a top-level model tensor that the plan relates:
# every model assignment named h was cut, the function's local included, and the relation compared
# with the FIRST kept original (the local, 2x) and continued from the top-level h (5x), so t = 2x
# was "proved" to be h (EQUIVALENT before 2026-12-04). Only the model's own tensors are cut now.
dim N = 70000
func f(a) {
  h = a * 2
  return h + 1
}
model m {
  input x : [N]
  y = f(x)
  h = x * 5
  z = h * 3
  output z
}
plan p of m {
  mesh tp = 2
  x : [N]
  t = x * 2 ~ h : [N]
  output z = t * 3 : [N]
}
