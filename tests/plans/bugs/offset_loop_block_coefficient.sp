# expect: NOT EQUIVALENT at line 17
# args: --dims N=56 --dims A=21 --dims H=11
# Offsets (session 28, helper-36): a block slice at i*(N/8) with the loop variable i = 3 as the
# coefficient: the model's row A at N = 56, A = 21 only (src/exec_pos.c note_terms).
dim N = 1000, H = 127, A = 110
model m {
  input x : [N, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  for i in 3..4 {
    h = slice(x, 0, i * (N / 8), (i + 1) * (N / 8))
  }
  output y = slice(h, 0, 0, 1) * 2 : [1, H]
}
