# expect: integer_position_fraction.sp:12:10: error: 1/2 is not an integer (an integer is needed here)
# integer_position_fraction.sp: a fraction in an integer position (x[1/2], 0..5/2) was truncated by C division (found by the plan-level differential fuzzer)
dim N = 4
model m {
  input x[2] : [N]
  y = x[0] * 3
  output y
}
plan p of m {
  mesh dp = 2
  for i in 0..2 { x[i] : [N] }
  y = x[1/2]
  for i in 0..5/2 {
    y = y + x[0]
  }
  output y = y : [N]
}
