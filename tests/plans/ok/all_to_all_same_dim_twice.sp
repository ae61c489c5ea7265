# args: --dims S=16
# all_to_all_same_dim_twice.sp: all_to_all with the split dim equal to the concat dim, applied twice, is
# the identity.  EQUIVALENT, and the reference executor agrees at the real sizes (it read past the
# chunk when the two dims were the same, an out-of-range read found by the plan-level fuzzer).
# (--dims S=16: shape reduction does not see the collective's divisibility; docs/soundness.md)
dim S = 16, D = 2

model m {
  input x : [S, D]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 4
  x : [S@dp, D]
  z = all_to_all(all_to_all(x, 0, 0, dp), 0, 0, dp)
  y = z * 2
  output y = y : [S@dp, D]
}
