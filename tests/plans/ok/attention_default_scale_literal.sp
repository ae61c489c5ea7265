# The model's default attention scale 1/sqrt(D) against the plan's literal scale = 1/8 for
# D = 64: the checked program takes the default at the real D (docs/soundness.md, "Sizes as
# values"), so D reduced to 3 meets 1/8 as the same number.  A false alarm (NOT EQUIVALENT at
# the reduced D) until 2026-12-06.
dim S = 4, D = 64
model m {
  input q : [S, D]
  input k : [S, D]
  input v : [S, D]
  o = attention(q, k, v)
  output o
}
plan p of m {
  mesh dp = 1
  q : [S, D]
  k : [S, D]
  v : [S, D]
  o = attention(q, k, v, scale = 1/8)
  output o = o : [S, D]
}
