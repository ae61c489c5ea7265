# expect: NOT EQUIVALENT at line 18
# args: --dims N=112 --dims M=84 --dims H=5
# Offsets (helper-37): the window 0..M of N is rescaled, but a reshape split [M, H] -> [M/2, 2*H]
# of it (no offset yet) dropped sp_pos_t.rescaled (src/ops_pos.c pos_reshape), so chunk 1 of 2
# of the outer part was a block again, never compared with rank 3's block 3*N/8: equal at
# N = 112, M = 84 only (real rows 600 and 60). The reshape keeps rescaled on every part.
dim N = 1600, H = 127, M = 120
model m {
  input x : [N, H]
  r = reshape(slice(x, 0, 0, M), [M / 2, 2 * H])
  y = slice(slice(chunk(r, chunks = 2, dim = 0, index = 1), 0, 0, 1), 1, 0, H) * 2
  output y
}
plan p of m {
  mesh dp = 8
  x : [N@dp, H]
  on dp = 3 {
    output y = slice(x, 0, 0, 1) * 2 : [1, H]
  }
}
