# expect: layout_send_without_recv.sp:16:3: error: send from rank (dp=0, tp=0) to rank (dp=1, tp=0) is never received
# a send that no recv takes
dim B = 4, H = 4, F = 8
model m {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)
  y = relu(h)
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [B@dp, H]
  w1 : [H, F@tp]
  h = matmul(x, w1)
  send(h, dp = 1 - rank.dp)
  output y = h : [B@dp, F@tp]
}
