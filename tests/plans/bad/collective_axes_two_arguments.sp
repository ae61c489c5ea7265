# expect: collective_axes_two_arguments.sp:12:30: error: all_reduce: the group's axes are one argument; write them as a list, [dp, tp]
# collective_axes_two_arguments.sp: a collective's group given as two positional axes; the checker kept the last one, the reference executor both (found by the plan-level differential fuzzer)
dim N = 4
model m {
  input x : [N]
  y = x * 1
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [N] partial(sum@tp)
  y = all_reduce(x, sum, dp, tp)
  output y = y : [N]
}
