# expect: EQUIVALENT
# The correct twin of bugs/offset_blklit_other_monomial.sp (session 28): the model reads row N/4 +
# 1, written as a sum (real sizes).
dim N = 1000, H = 127, M = 110
model m {
  input x : [N, H]
  y = slice(x, 0, N / 4 + 1, N / 4 + 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  h = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = slice(h, 0, 1, 2) * 2 : [1, H]
}
