# expect: NOT EQUIVALENT at line 18
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# chunk index 0 of 2: extent ceil(S/2).  Real S = 70000 splits evenly (35000), reduced S = 5
# does not (3, a full first chunk, so g_chunk flags nothing); 3 = reduced K, real K = 24.
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
  c = chunk(a, 2, 0, index = 0)
  output y = x * sum(c * 0 + 1)
}
