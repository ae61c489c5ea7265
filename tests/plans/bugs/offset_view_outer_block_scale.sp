# expect: NOT EQUIVALENT at line 19
# args: --dims N=280 --dims A=40 --dims B=105 --dims H=11
# Offsets (helper-37): a block on a reshape split's outer part, [N, H] -> [A, N/A, H], carried
# the monomial of A, but the row of x it reaches, (3*A/8) * (N/A) = 3*N/8, is scaled as N:
# against the plan's size term B (scaled as A) it was kept apart, equal at N = 280, A = 40,
# B = 105 only (real rows 1050 and 210). A block on an outer part or a merge is a block of the
# axis it was cut from (sp_pos_t.src).
dim N = 2800, H = 31, A = 80, B = 210
model m {
  input x : [N, H]
  r = reshape(x, [A, N / A, H])
  c = chunk(chunk(r, chunks = 4, dim = 0, index = 1), chunks = 2, dim = 0, index = 1)
  y = reshape(slice(slice(c, 0, 0, 1), 1, 0, 1), [1, H]) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  output y = slice(slice(x, 0, B, 2 * B), 0, 0, 1) * 2 : [1, H]
}
