# ok/cutoff_local_mean_avg.sp with the average of the ranks' means written as their sum (dp
# times too large): under --mesh-cutoff (dp = 8 checked at 3) the sum over the checked members is
# no count (each member's mean holds its own rows), and the difference is found on the cut mesh.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 21
dim B = 4096, H = 64
model m {
  input x : [B, H]
  param w : [H]
  y = x * w
  l = mean(y)
  a = mean(y) * 2
  output l, a
}
plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  w : [H]
  y = x * w
  lm = mean(y)
  output a = all_reduce(lm * 2, sum, dp) : []
  lp = lm / dp ~ l : [] partial(sum@dp)
  output l = all_reduce(lp, sum, dp) : []
}
