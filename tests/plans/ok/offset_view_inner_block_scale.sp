# The correct twin of bugs/offset_view_inner_block_scale.sp: the plan reads row 5*K/8 of x, a
# size term of K like the model's block on the inner part K of [N/K, K, H] (rescaled: of K's
# scale, not N's): EQUIVALENT.
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
  output y = slice(slice(x, 0, 5 * K / 8, 5 * K / 4), 0, 0, 1) * 2 : [1, H]
}
