# expect: NOT EQUIVALENT at line 20
# args: --dims N=1680 --dims K=120 --dims L=80 --dims H=13
# Offsets: blocks on inner parts of two splits of one axis, [N/K, K, H] and [N/L, L, H], are
# blocks of K's and L's scales on an axis of N's (sp_pos_t.host): chunk 1 of 2 of K is row K/2
# of x, rank 3's chunk of L over dp = 4 row 3*L/4, equal at K = 120, L = 80 only (real rows
# 40 and 84). Two blocks of different scales that may sit on one axis (here of the same host N)
# are compared (src/exec_pos.c blocks_apart); blocks never compared pass this under --dims.
dim N = 1680, H = 31, K = 80, L = 112
model m {
  input x : [N, H]
  c = chunk(reshape(x, [N / K, K, H]), chunks = 2, dim = 1, index = 1)
  y = reshape(slice(slice(c, 0, 0, 1), 1, 0, 1), [1, H]) * 11
  output y
}
plan p of m {
  mesh dp = 4
  x : [N, H]
  on dp = 3 {
    c = chunk(reshape(x, [N / L, L, H]), chunks = dp, dim = 1, index = rank.dp)
    output y = reshape(slice(slice(c, 0, 0, 1), 1, 0, 1), [1, H]) * 11 : [1, H]
  }
}
