# expect: NOT EQUIVALENT at line 21
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# The plan masks causally with offset K = 10: at the real S = 40 query i sees keys 0..i+10 only,
# while the model's attention sees all 40.  K is kept at its real 10 (an attribute), S is
# reduced to 3, where offset 10 >= S - 1 unmasks every key: EQUIVALENT.  (The review's plan had
# S = 300, D = 256, past the reference executor's cross-check; smaller here, as fast at the
# real sizes.)
dim S = 40, D = 2, K = 10
model m {
  input q : [1, S, D]
  input k : [1, S, D]
  input v : [1, S, D]
  y = attention(q, k, v)
  output y
}
plan p of m {
  mesh dp = 1
  q : [1, S, D]
  k : [1, S, D]
  v : [1, S, D]
  output y = attention(q, k, v, causal = 1, offset = K) : [1, S, D]
}
