# expect: limit_dim_overflow.sp:4:9: error: dimension out of range (at most 2^40)
# A dim near 2^63 overflowed in shape reduction (UBSan): sizes are bounded so that sums, products
# and chunk computations stay within 64 bits.
dim B = 9223372036854775807 - 1
model m {
  input x : [B]
  output x
}
plan p of m {
  mesh dp = 2
  x : [B@dp]
  output x = x : [B@dp]
}
