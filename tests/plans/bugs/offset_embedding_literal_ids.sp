# expect: NOT EQUIVALENT at line 18
# args: --dims Q=7 --dims A=10 --dims B=23 --dims H=11
# Offsets (session 27, helper-33): `embedding(t, ids = [3])` reads row 3 of t, row Q + 3 of x
# when t is x's rows from Q. The literal ids' axis was given no offset (src/ops_pos.c
# pos_embedding_ids composes the table's rows with a literal term now), so at --dims Q=7, A=10
# the plan's row 7 + 3 was the model's A and the plan EQUIVALENT; at the real sizes it reads
# row 103, the model row 110. A size start plus a literal: the real sizes are checked.
dim B = 1024, H = 128, Q = 100, A = 110
model m {
  input x : [B, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  t = slice(x, 0, Q, 2 * Q)
  output y = embedding(t, ids = [3]) * 2 : [1, H]
}
