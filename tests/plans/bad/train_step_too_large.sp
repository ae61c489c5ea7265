# expect: train_step_too_large.sp:9:9: error: 'step' of adam must be a positive integer of at most 10^6
# Found by a review (2026-12-04): step = 2^40 aborted in GMP (beta^step computed exactly); 2^31 hung past --timeout.
dim B = 4, H = 4
model m {
  input x : [B, H]
  param w : [H, H]
  loss = mean(matmul(x, w))
  output loss
  train adam(lr = 1e-3, step = 2^40)
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  w : [H, H]
  lp = sum(matmul(x, w)) / (B*H)
  output loss = all_reduce(lp, sum, dp) : []
  omit grad.w, next.w, next.adam.m.w, next.adam.v.w
}
