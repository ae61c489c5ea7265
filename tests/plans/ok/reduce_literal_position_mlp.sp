# A dp 2 x tp 4 MLP over the first 4 tokens (literal position 4; review of 2026-12-04, helper-27):
# the first version of the block rule cut every size by up to three mesh sizes and kept all real
# sizes (UNKNOWN, max-elements). Blocks are now cut only as often, and by what, the program cuts.
dim B = 64, S = 2048, H = 4096, F = 4*H
model m {
  input x : [B, S, H]
  param w1 : [H, F]
  param w2 : [F, H]
  h = relu(matmul(slice(x, 1, 0, 4), w1))
  y = matmul(h, w2)
  output y
}
plan p of m {
  mesh dp = 2, tp = 4
  x : [B@dp, S, H]
  w1 : [H, F@tp]
  w2 : [F@tp, H]
  h = relu(matmul(slice(x, 1, 0, 4), w1))
  yp = matmul(h, w2)
  output y = all_reduce(yp, sum, tp) : [B@dp, 4, H]
}
