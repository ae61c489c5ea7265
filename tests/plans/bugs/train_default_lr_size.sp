# expect: NOT EQUIVALENT at line 27
# The optimizer's defaults are constants of the program (rev51): the model trains with sgd's
# default lr = 1/1000, which its text does not write; the plan's update divides by
# B^3 * H^3 = 8 * 10^15 at the real sizes, 1000 at H = 5. The shape reduction avoided only the
# literals written, so it chose H = 5 (3 and 4 are the model's) and the plan was EQUIVALENT
# with --no-cross-check (by default the second reference run, at H = 7, found the difference);
# with `lr = 1/1000` written, H = 5 was refused. src/reduce.c train_constants().
dim B = 2, H = 100000
model m {
  input x : [B, H]
  param w : [H]
  y = x * w * 3 / 4
  loss = sum(y)
  output loss
  train sgd
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H]
  y = x * w * 3 / 4
  lp = sum(y) ~ loss : [] partial(sum@dp)
  loss = all_reduce(lp, sum, dp)
  gw = all_reduce(sum(x, dim = 0), sum, dp) * 3 / 4
  output loss = loss : []
  output grad.w = gw : [H]
  output next.w = w - gw / (B*B*B*H*H*H) : [H]
}
