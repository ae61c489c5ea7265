# ulysses_all_to_all_dp8.sp: a Ulysses-style all_to_all over dp turns sequence shards into head shards,
# related as NH@(tp,dp) (tp major, as written).  EQUIVALENT; the reference executor agrees on all
# 16 ranks (it numbered the members of @(tp,dp) in mesh order before, and reported a difference).
dim S = 16, NH = 16, D = 2

model m {
  input x : [S, NH, D]
  y = x * 3
  output y
}

plan p of m {
  mesh dp = 8, tp = 2
  x : [S@dp, NH@tp, D]
  z = all_to_all(x, 1, 0, dp)             ~ x : [S, NH@(tp,dp), D]
  y = z * 3
  output y = y : [S, NH@(tp,dp), D]
}
