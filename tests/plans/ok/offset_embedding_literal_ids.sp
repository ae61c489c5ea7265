# expect: EQUIVALENT
# The correct twin of bugs/offset_embedding_literal_ids.sp (session 27): the model reads
# the plan's position written as a sum, so both are checked at the real sizes and agree (no
# `# args`: the twin's --dims are not admissible here).
dim B = 1024, H = 128, Q = 100, A = 110
model m {
  input x : [B, H]
  y = slice(x, 0, Q + 3, Q + 4) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  t = slice(x, 0, Q, 2 * Q)
  output y = embedding(t, ids = [3]) * 2 : [1, H]
}
