# expect: NOT EQUIVALENT at line 20
# A causal offset written as arithmetic on a rank coordinate (review of 2026-12-04, helper-25):
# rank.cp + rank.cp*2 is 3 on rank 1, the shard size S/cp at S = 6 only (the reference executor
# caught it before, as an internal error). Its value on each rank is a literal position.
dim B = 1, NH = 1, S = 64, D = 2
model att {
  input q : [B, NH, S, D]
  input k : [B, NH, S, D]
  input v : [B, NH, S, D]
  o = attention(q, k, v, causal = 1)
  output o
}
plan att_cp2 of att {
  mesh cp = 2
  q : [B, NH, S@cp, D]
  k : [B, NH, S@cp, D]
  v : [B, NH, S@cp, D]
  kf = all_gather(k, 2, cp)
  vf = all_gather(v, 2, cp)
  output o = attention(q, kf, vf, causal = 1, offset = rank.cp + rank.cp*2) : [B, NH, S@cp, D]
}
