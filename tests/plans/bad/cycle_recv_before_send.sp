# expect: cycle_recv_before_send.sp:13:9: error: recv on rank (pp=0) from rank (pp=1) has no matching send before it in plan order (a deadlock)
# a pipeline whose stages each wait for the other first: a cycle, reported at the first recv
dim B = 4, H = 4
model m {
  input x : [B, H]
  y = relu(x)
  output y
}
plan p of m {
  mesh pp = 2
  x : [B, H]
  on pp = 0 {
    a = recv(pp = 1)
    send(relu(x), pp = 1)
  }
  on pp = 1 {
    b = recv(pp = 0)
    send(relu(x), pp = 0)
  }
  output y = relu(x) : [B, H]
}
