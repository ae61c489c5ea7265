# expect: NOT EQUIVALENT at line 18
# args: --dims S=80 --dims A=27 --dims C=7 --dims H=13
# Offsets (session 27, helper-34): `ids = [C]` with C a size was composed as a literal id:
# on chunk 1 of 4 the row is S/4 + C, a sum of two sizes, recorded as a block plus a literal,
# and the model's `ids = [A]` as a literal, so at --dims S=80, A=27, C=7 the plan was
# EQUIVALENT; real rows 106 and 100. An id written with sizes is a size term now (src/exec_pos.c
# size_ids).
dim S = 384, H = 256, A = 100, C = 10
model m {
  input x : [S, H]
  y = embedding(x, ids = [A]) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, H]
  t = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = embedding(t, ids = [C]) * 2 : [1, H]
}
