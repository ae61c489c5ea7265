# expect: train_default_lr_dims.sp:6:12: error: the sizes given with --dims are not an admissible reduction (H=10): a size of 4096 at the real sizes (line 27) reduces to 1000, a constant of a tensor expression
# The optimizer's defaults are constants of the program (rev51): sgd's default lr = 1/1000 met
# the plan's 1 / (H*H*H) at H = 10 (real H = 16: 1/4096), and --dims H=10 was taken as
# admissible: EQUIVALENT with --no-cross-check. src/reduce.c train_constants().
# args: --dims H=10 --no-cross-check
dim B = 4, H = 16
model m {
  input x : [B, H]
  param w : [H, H]
  y = matmul(x, w)
  loss = sum(y)
  output loss
  train sgd
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H, H]
  y = matmul(x, w)
  lp = sum(y) ~ loss : [] partial(sum@dp)
  loss = all_reduce(lp, sum, dp)
  gy = mul(y, 0) + 1
  gw = matmul(transpose(x, 0, 1), gy)
  rw = all_reduce(gw, sum, dp)
  output loss = loss : []
  output grad.w = rw : [H, H]
  output next.w = w - rw / (H*H*H) : [H, H]
}
