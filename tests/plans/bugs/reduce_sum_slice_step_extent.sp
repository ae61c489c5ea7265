# expect: NOT EQUIVALENT at line 18
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# slice with step 2: extent ceil(S/2), not a monomial; the static reading ignores the step and
# g_slice flags nothing.  Reduced S=5 -> 3 = K; real 70000 -> 35000, K = 24.
dim B = 4, S = 70000, K = 24
model m {
  input x : [B]
  input a : [S]
  input w : [K]
  y = x * sum(w * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B]
  a : [S]
  c = slice(a, 0, 0, S, 2)
  output y = x * sum(c * 0 + 1)
}
