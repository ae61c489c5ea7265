# expect: NOT EQUIVALENT at line 16
# args: --dims N=56 --dims A=21 --dims H=11
# Offsets (session 28, helper-36): rank 3's block of x : [N@dp] (dp = 8) starts at 3*N/8, a rank
# coordinate as the coefficient, no factor of the products rule: the model's row A at N = 56,
# A = 21 only (real rows 375 and 110; src/exec_pos.c note_terms).
dim N = 1000, H = 127, A = 110
model m {
  input x : [N, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 8
  x : [N@dp, H]
  on dp = 3 {
    output y = slice(x, 0, 0, 1) * 2 : [1, H]
  }
}
