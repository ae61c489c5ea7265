# expect: NOT EQUIVALENT at line 17
# The plan of ok/gqa_heads_without_ratio.sp with the key/value heads replicated: each rank's 32
# query heads read groups of 4 of the 8 kv heads instead of groups of 8 (a refusal before).
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
  k : [B, NKV, S, D]
  v : [B, NKV, S, D]
  output o = attention(q, k, v, causal = 1) : [B, NH@tp, S, D]
}
