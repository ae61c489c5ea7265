# expect: NOT EQUIVALENT at line 25
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# The plan counts B + S elements (46), the model counts F (70000): wrong at the real sizes.
# join()'s parameters are named like the model inputs a, b : [S], so the static reading
# (src/reduce_sums.c sums_concat/declared_extent) takes the concat as 2*S (a monomial), records
# its location, and the run-time "sum of sizes" check (src/exec.c note_clamped) is skipped for
# every call of join, whatever it is called with.  Reduced B=2, S=3, F=5: B + S = F there only.
dim B = 6, S = 40, F = 70000
func join(a, b) {
  return concat(a, b, dim = 0)
}
model m {
  input x : [B]
  input a : [S]
  input b : [S]
  input w : [F]
  y = x * sum(w * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 1
  x : [B]
  a : [S]
  c = join(x, a)
  output y = x * sum(c * 0 + 1)
}
