# expect: coverage_replica_layout_per_rank.sp:15:15: error: rank (dp=0) reads 'w' but its output 'next.w' leaves part of that rank's copy out: those elements would keep the old value (declare 'next.w' on the elements each rank holds, or 'omit next.w')
# w declared whole on dp = 0 and sharded on dp = 1: the replica rule used the last
# declaration's layout for every rank, so dp = 0, which holds and reads all of w but updates
# row 0 only, passed (EQUIVALENT before).  Each declaration now holds the ranks it was made on.
dim B = 4, H = 2
model m {
  input x : [B, H]
  param w : [H, H]
  loss = sum(matmul(x, w))
  output loss
  train sgd(lr = 1/2)
}
plan p of m {
  mesh dp = 2
  on dp = 0 { w : [H, H] }
  on dp = 1 { w : [H@dp, H] }
  x : [B, H]
  on dp = 0 {
    y = matmul(x, w)
    output loss = sum(y) : []
    g = matmul(transpose(x, 0, 1), y * 0 + 1)
    output grad.w = g : [H, H]
    send(slice(g, 0, 1, 2), dp = 1)
    nw = slice(w, 0, 0, 1) - slice(g, 0, 0, 1) / 2
  }
  on dp = 1 {
    gs = recv(dp = 0)
    nw = w - gs / 2
  }
  output next.w = nw : [H@dp, H]
}
