# definedness_mask_times_division.sp: a per-row mean over valid tokens.  The model selects with
# where, so a row without valid tokens is 0; the plan multiplies the quotient by the row's
# "has tokens" indicator instead, which is 0 * (0/0) = NaN on real hardware for such a row.  The
# two agree wherever both are defined, so before definedness was checked this was EQUIVALENT.
# expect: NOT EQUIVALENT at line 24

dim B = 4, S = 8

model m {
  input x    : [B, S]
  input mask : [B, S]
  cnt = sum(mask, dim = 1)
  tot = sum(x * mask, dim = 1)
  y   = where(cnt > 0, tot / cnt, 0)
  output y
}

plan p_dp2_tp2 of m {
  mesh dp = 2, tp = 2
  x    : [B@dp, S@tp]
  mask : [B@dp, S@tp]
  cnt = all_reduce(sum(mask, dim = 1), sum, tp)
  tot = all_reduce(sum(x * mask, dim = 1), sum, tp)
  y   = (cnt > 0) * (tot / cnt)
  output y = y : [B@dp]
}
