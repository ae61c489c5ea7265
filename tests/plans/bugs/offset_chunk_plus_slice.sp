# expect: NOT EQUIVALENT at line 17
# args: --dims B=48 --dims Q=5 --dims A=17 --dims H=13
# Offsets (session 26): a chunk's piece plus a slice's start. The plan's rows start at
# B/4 + Q of x, the model's at A: equal at the reduced sizes (12 + 5 = 17), so the plan was
# EQUIVALENT there; at the real sizes 256 + 10 = 266 is not A = 267. The slice adds a start of
# another monomial than the chunk's block: the real sizes are checked (src/ops_pos.c).
dim B = 1024, H = 128, Q = 10, A = 267
model m {
  input x : [B, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, Q) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  h = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = slice(h, 0, Q, 2 * Q) * 2 : [Q, H]
}
