# expect: NOT EQUIVALENT at line 17
# args: --dims N=88 --dims A=33 --dims H=7
# Offsets (session 28, helper-36): chunk 1 of 4, then chunk 1 of 2, is row 3*N/8, a block of
# N/8 whose coefficient 3 is no factor of the products rule: equal to the model's A at
# N = 88, A = 33 only (real rows 375 and 110). A block and a size term of monomials scaled
# differently go real (src/exec_pos.c note_terms).
dim N = 1000, H = 127, A = 110
model m {
  input x : [N, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  h = chunk(chunk(x, chunks = 4, dim = 0, index = 1), chunks = 2, dim = 0, index = 1)
  output y = slice(h, 0, 0, 1) * 2 : [1, H]
}
