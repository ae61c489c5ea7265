# a rank-dependent branch that no rank takes relates no element: the stage has no pairs (its key is
# empty; once a NULL memcpy under UBSan) (an `on tp = 5` block did this until coordinates off the mesh became an error)
dim B = 4, H = 4
model m {
  input x : [B, H]
  param w : [H, H]
  h = matmul(x, w)
  y = 2 * h
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  w : [H, H@tp]
  if rank.tp == 5 {
    g = matmul(x, w) ~ h : [B, H@tp]
  }
  h = matmul(x, w) ~ h : [B, H@tp]
  y = 2 * h
  output y = all_gather(y, tp, dim = 1) : [B, H]
}
