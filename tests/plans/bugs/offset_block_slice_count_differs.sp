# expect: NOT EQUIVALENT at line 19
# args: --dims B=120 --dims M=5 --dims A=35 --dims H=11
# Offsets (session 27, helper-33): slice(h, 0, M, 2*M) of chunk 1 of 4 was taken for a block
# (a piece of an equal cut) because B/4 is a whole number of M-pieces at both sizes, 6 of them
# at --dims B=120, M=5 and 5 at the real B = 1000, M = 50; the nested block B/4 + M is 7*M
# reduced and 6*M real, which the products rule does not relate. At A=35 the plan was
# EQUIVALENT; real rows 300 and 110. A block slice needs the same count at both sizes now
# (src/exec_pos.c block_slice).
dim B = 1000, H = 127, M = 50, A = 110
model m {
  input x : [B, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, M) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  h = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = slice(h, 0, M, 2 * M) * 2 : [M, H]
}
