# expect: NOT EQUIVALENT at line 19
# args: --dims A=10 --dims B=28 --dims H=13
# Offsets (session 27, helper-33): chunk 1 of 4 then a literal slice start 3 is row B/4 + 3, a
# block plus a literal (the block rule's form), while the model reads row A, a size term. The
# block rule keeps B/4 + 3 apart from the literals and the products rule A from other
# monomials, but neither keeps them apart from each other: at --dims B=28, A=10 they were equal
# and the plan EQUIVALENT; real rows 253 and 110. Both kinds in one run: the real sizes are
# checked (src/exec_pos.c sp_pos_note).
dim B = 1000, H = 127, A = 110
model m {
  input x : [B, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  h = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = slice(h, 0, 3, 4) * 2 : [1, H]
}
