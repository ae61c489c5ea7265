# coeff_bits_limit.sp: a normal form whose coefficient outgrows --max-coeff-bits ends in UNKNOWN
# naming the limit (fuzz find 4: rational constants had no size limit), never a wrong verdict.
# args: --max-coeff-bits 16
# expect: UNKNOWN

dim N = 4

model m {
  input x : [N]
  y = mul(x, 123454321)
  output y
}

plan p of m {
  mesh dp = 2
  x : [N@dp]
  y = mul(mul(x, 11111), 11111)          # 11111^2 = 123454321: 27 bits
  output y = y : [N@dp]
}
