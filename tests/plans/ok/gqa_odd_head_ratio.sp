# Qwen2.5-7B's GQA: 28 query heads over 4 key/value heads, 7 per group, sharded over tp = 2
# (review of 2026-12-04, helper-28): refused before (NH grew to multiples of 2*NKV only). The
# query heads grow to the least multiple of the kv heads, two or more per group, that divides
# the real NH.
dim B = 64, NH = 28, NKV = 4, S = 2048, D = 128
model m {
  input q : [B, NH, S, D]
  input k : [B, NKV, S, D]
  input v : [B, NKV, S, D]
  o = attention(q, k, v, causal = 1)
  output o
}
plan p of m {
  mesh tp = 2
  q : [B, NH@tp, S, D]
  k : [B, NKV@tp, S, D]
  v : [B, NKV@tp, S, D]
  output o = attention(q, k, v, causal = 1) : [B, NH@tp, S, D]
}
