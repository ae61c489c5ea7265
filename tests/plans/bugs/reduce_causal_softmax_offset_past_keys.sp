# expect: NOT EQUIVALENT at line 14
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# causal_softmax offset = K (dim kept at its real 10 as an attribute) while S reduces to 2:
# every key visible at the reduced sizes, a causal mask at the real S = 300.
dim S = 300, K = 10
model m {
  input x : [S, S]
  y = softmax(x, dim = -1)
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, S]
  output y = causal_softmax(x, offset = K) : [S, S]
}
