# A reshape's -1 is NH/4, whole at the real NH = 20: the reduced NH keeps its factor 4
# (a refusal before: the reduced NH = 5 left a remainder).
dim S = 64, NH = 20, D = 64
model m {
  input x : [S, NH, D]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, NH, D]
  r = reshape(x, [S, 4, -1, D])
  output y = reshape(r * 2, [S, NH, D]) : [S, NH, D]
}
