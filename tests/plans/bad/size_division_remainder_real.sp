# expect: size_division_remainder_real.sp:15:27: error: 18/4 is not an integer (an integer is needed here)
# A size division with a remainder at the real sizes (NH = 18 heads in 4 groups): the real program
# stops there. Before the review of 2026-12-04 the message named the reduced sizes (5/4), and
# `--dims NH=12` made the division whole and the plan EQUIVALENT; now the dims of such a division
# keep their real sizes (src/reduce.c real_remainder).
dim S = 4096, NH = 18, D = 128
model m {
  input x : [S, NH, D]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 2
  x : [S, NH, D]
  z = reshape(x, [S, 4, NH/4, D])
  w = reshape(z * 2, [S, NH, D])
  output y = w : [S, NH, D]
}
