# definedness_irrational_pole.sp: the plan multiplies and divides by h*h - 2, which vanishes only
# at h = +-sqrt(2): the plan is undefined there and the model is not, so the plan is not
# equivalent over the reals, but no rational point shows it.  The honest answer is UNKNOWN,
# naming the denominator (never EQUIVALENT).
# expect: UNKNOWN

dim B = 4

model m {
  input x : [B]
  input h : [B]
  y = x * 3
  output y
}

plan p_dp2 of m {
  mesh dp = 2
  x : [B@dp]
  h : [B@dp]
  d = h * h - 2
  y = x * 3 * d / d
  output y = y : [B@dp]
}
