# expect: NOT EQUIVALENT at line 19
# A literal query head of a GQA group the program does not write (review of 2026-12-04,
# helper-28): head 7 of 48 heads over 4 kv heads reads kv head 0 (groups of 12); the plan gives
# it kv head 1, right at NH = 24 (groups of 6). With literal positions, attention's groups send
# the check to the real sizes.
dim NH = 48, NKV = 4, S = 16, D = 8
model m {
  input q : [NH, S, D]
  input k : [NKV, S, D]
  input v : [NKV, S, D]
  o = slice(attention(q, k, v), 0, 7, 8)
  output o
}
plan p of m {
  mesh dp = 1
  q : [NH, S, D]
  k : [NKV, S, D]
  v : [NKV, S, D]
  output o = attention(slice(q, 0, 7, 8), slice(k, 0, 1, 2), slice(v, 0, 1, 2)) : [1, S, D]
}
