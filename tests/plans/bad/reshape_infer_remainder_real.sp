# expect: reshape_infer_remainder_real.sp:3:13: error: the sizes given with --dims are not an admissible reduction (NH=12): NH has more factors 2 at the reduced sizes than at the real ones (the count or extent 4 could divide a product of sizes there only)
# args: --dims NH=12
dim S = 64, NH = 18, D = 64
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
