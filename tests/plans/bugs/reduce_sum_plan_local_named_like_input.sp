# expect: NOT EQUIVALENT at line 21
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# Plan local a = x (extent B) is named like the model input a : [S]; the static reading of
# concat(a, b) takes the model's layouts (S + S = 2S, a monomial), records the call, and the
# run-time sum-of-sizes check is skipped.  Real count B + S = 46, model count F = 70000.
dim B = 6, S = 40, F = 70000
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
  b : [S]
  a = x
  c = concat(a, b, dim = 0)
  output y = x * sum(c * 0 + 1)
}
