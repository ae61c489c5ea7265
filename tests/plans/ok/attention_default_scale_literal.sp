# fuzz: not a seed (S = 1000 keeps the real sizes beyond the cross-check; the fuzzer's reference run there takes minutes)
# The model's default attention scale 1/sqrt(D) against the plan's literal scale = 1/8 for
# D = 64: the checked program takes the default at the real D (docs/soundness.md, "Sizes as
# values"), so D reduced meets 1/8 as the same number.  A false alarm (NOT EQUIVALENT at the
# reduced D, where the reference executor, unable to run the real sizes (S = 1000), took the
# default at the reduced D too) until 2026-12-06.
dim NH = 2, S = 1000, D = 64
model m {
  input q : [NH, S, D]
  input k : [NH, S, D]
  input v : [NH, S, D]
  o = attention(q, k, v)
  output o
}
plan p of m {
  mesh dp = 1
  q : [NH, S, D]
  k : [NH, S, D]
  v : [NH, S, D]
  o = attention(q, k, v, scale = 1/8)
  output o = o : [NH, S, D]
}
