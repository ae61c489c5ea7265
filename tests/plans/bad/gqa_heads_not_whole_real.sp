# expect: gqa_heads_not_whole_real.sp:12:7: error: attention: 60 query heads are not a multiple of 8 key/value heads
# args: --dims NH=24
# Query heads per key/value head, a split no layout writes (session 26): 60 query heads over 8
# key/value heads cannot run; at the reduced NH = 24 they were 3 per group and the plan (and
# the model) EQUIVALENT. The heads' real counts are read through their extents' monomials
# (src/exec_pos.c sp_refine_pos): not whole there, the real sizes are checked, where attention fails.
dim B = 1, NH = 60, NKV = 8, S = 16, D = 256
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
