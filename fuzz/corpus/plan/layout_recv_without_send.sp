# expect: layout_recv_without_send.sp:16:7: error: recv on rank (dp=0, tp=0) from rank (dp=1, tp=0) without a matching send before it
# a recv with no matching send before it
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
  g = recv(dp = 1 - rank.dp)
  output y = h : [B@dp, F@tp]
}
