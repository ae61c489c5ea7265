# args: --dims N=1400 --dims A=40 --dims H=11
# The correct twin of bugs/offset_view_outer_block_scale.sp: the plan reads row 3*N/8 as chunk 3
# of 8 of x, a block of N like the model's block on the outer part A of [A, N/A, H] (a block of
# the axis it was cut from): EQUIVALENT at the reduced sizes.
dim N = 2800, H = 31, A = 80
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
  output y = slice(chunk(x, chunks = 8, dim = 0, index = 3), 0, 0, 1) * 2 : [1, H]
}
