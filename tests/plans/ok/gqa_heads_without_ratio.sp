# GQA attention with NH = 64 query heads and NKV = 8 key/value heads, no G = NH/NKV written
# (helper-24, 2026-12-04): refused before ("10 query heads are not a multiple of 8" at the
# reduced sizes). The failing division makes src/check.c run_divisible grow NH to a multiple of
# twice the key/value heads, where the real NH divides.
dim B = 1, NH = 64, NKV = 8, S = 16, D = 128
model att {
  input q : [B, NH, S, D]
  input k : [B, NKV, S, D]
  input v : [B, NKV, S, D]
  o = attention(q, k, v, causal = 1)
  output o
}
plan att_tp of att {
  mesh tp = 2
  q : [B, NH@tp, S, D]
  k : [B, NKV@tp, S, D]
  v : [B, NKV@tp, S, D]
  output o = attention(q, k, v, causal = 1) : [B, NH@tp, S, D]
}
