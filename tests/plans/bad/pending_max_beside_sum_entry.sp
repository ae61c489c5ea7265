# expect: pending_max_beside_sum_entry.sp:14:19: error: a pending max must be the layout's only partial entry (the checker models it by one decomposition, which does not combine with other entries)
# input partial(max@dp, sum@tp), i.e. x = sum_tp(max_dp(parts)), output as is under
# partial(sum@tp, max@dp), i.e. max_dp(sum_tp(parts)): a different value.
# parts p[dp][tp]: p00 = 1, p01 = 0, p10 = 0, p11 = 1: x = max(1,0) + max(0,1) = 2,
# the output's logical value is max(1+0, 0+1) = 1, the model's y = x = 2.
dim N = 70000
model m {
  input x : [N]
  y = x
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [N] partial(max@dp, sum@tp)
  output y = x : [N] partial(sum@tp, max@dp)
}
