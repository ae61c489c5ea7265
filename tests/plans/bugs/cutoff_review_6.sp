# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 25
# cutoff_review_6.sp: a reduced dim that would land on the checked size (/ NH for / dp).
# Wrong at the real mesh; the mesh cutoff once reported it EQUIVALENT (an adversarial review,
# issue 12). The cutoff now keeps the real mesh (or a checked size that cannot hide it).
dim H = 4, NH = 6, B = 100000

model m {
  input x : [B, H]
  input s : [NH]
  param w : [H, H]
  y = matmul(x, w)
  loss = mean(y)
  output loss
  train sgd(lr = 1/10)
}

plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  s : [NH]
  w : [H, H]
  y = matmul(x, w)                        ~ y : [B@dp, H]
  lp = sum(y) / ((B/dp)*H)
  loss = all_reduce(lp, sum, dp) / NH     # WRONG: should be / dp
  gy = mul(y, 0) + 1/(B*H)
  gw = all_reduce(matmul(transpose(x, 0, 1), gy), sum, dp)
  output loss = loss : []
  output grad.w = gw : [H, H]
  output next.w = w - gw / 10 : [H, H]
}
