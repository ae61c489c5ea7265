# expect: NOT EQUIVALENT at line 19
# args: --dims S=80 --dims A=23
# Offsets (session 27, helper-34): causal_softmax keeps key k for query row i when
# k <= i + offset, so the `offset` attribute is a position added to the rows' own: here the rows
# are chunk 1 of 4 then row 3 (S/4 + 3, a block plus a literal) and the window is placed at A.
# The attribute was no axis's offset, so at --dims S=80, A=23 (S/4 + 3 = A) the plan was
# EQUIVALENT; real S = 384, A = 90: row 99 with window 90. The queries', the keys' and the
# attribute's offsets are composed as one position now (src/exec_pos.c relate_pos).
dim S = 384, A = 90
model m {
  input x : [S, S]
  y = slice(chunk(causal_softmax(x, offset = 0), chunks = 4, dim = 0, index = 1), 0, 3, 4)
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, S]
  r = slice(chunk(x, chunks = 4, dim = 0, index = 1), 0, 3, 4)
  output y = causal_softmax(r, offset = A) : [1, S]
}
