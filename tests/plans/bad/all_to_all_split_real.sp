# expect: all_to_all_split_real.sp:19:18: error: all_to_all: dim 0 of size 10002 is not divisible by 4 ranks
# args: --dims S=48
# A collective's split the layouts do not write (session 26): all_to_all splits each rank's
# S/dp = 10002 rows over 4 ranks, which the real program cannot do; at the reduced S = 48 the
# rows were 12 and the plan EQUIVALENT (too large for the reference executor to run it). The
# split dim's real extent is read through its monomial (src/plan.c split_whole_real): not whole
# there, the real sizes are checked, where the all_to_all fails.
dim S = 40008, D = 2

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
