# expect: NOT EQUIVALENT at line 22
# args: --dims S=80 --dims A=23 --no-cross-check
# Offsets (session 27, helper-34): the same for attention(..., causal = 1, offset = A) with
# the queries at S/4 + 3 (src/exec_pos.c relate_pos). EQUIVALENT at --dims S=80, A=23 before
# (the real sizes are small: without --no-cross-check the reference executor caught it as an
# internal error).
dim S = 384, D = 2, A = 90
model m {
  input q : [1, S, D]
  input k : [1, S, D]
  input v : [1, S, D]
  o = attention(q, k, v, causal = 1)
  y = slice(chunk(o, chunks = 4, dim = 1, index = 1), 1, 3, 4)
  output y
}
plan p of m {
  mesh dp = 1
  q : [1, S, D]
  k : [1, S, D]
  v : [1, S, D]
  qr = slice(chunk(q, chunks = 4, dim = 1, index = 1), 1, 3, 4)
  output y = attention(qr, k, v, causal = 1, offset = A) : [1, 1, D]
}
