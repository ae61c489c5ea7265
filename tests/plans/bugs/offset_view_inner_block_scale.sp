# expect: NOT EQUIVALENT at line 19
# args: --dims N=560 --dims K=56 --dims H=17
# Offsets (helper-37): an inner part K of a reshape split [N, H] -> [N/K, K, H] let blocks of
# K's scale sit on N's axis: chunk 1 of 2 then 1 of 4 of it is row 5*K/8 of x, the plan's
# chunk 1 of 16 row N/16, two blocks never compared, equal at N = 560, K = 56 only (real rows
# 98 and 70). An inner part scaled otherwise than the axis split is rescaled
# (src/exec_pos.c view_scales): its blocks are size terms, compared with every other.
dim N = 1568, H = 47, K = 112
model m {
  input x : [N, H]
  r = reshape(x, [N / K, K, H])
  c = chunk(chunk(r, chunks = 2, dim = 1, index = 1), chunks = 4, dim = 1, index = 1)
  y = reshape(slice(slice(c, 0, 0, 1), 1, 0, 1), [1, H]) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  output y = slice(chunk(x, chunks = 16, dim = 0, index = 1), 0, 0, 1) * 2 : [1, H]
}
