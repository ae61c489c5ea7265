# an 'on' block that matches no rank relates no element: the stage has no pairs (its key is
# empty; once a NULL memcpy under UBSan)
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
  on tp = 5 {
    g = matmul(x, w) ~ h : [B, H@tp]
  }
  h = matmul(x, w) ~ h : [B, H@tp]
  y = 2 * h
  output y = all_gather(y, tp, dim = 1) : [B, H]
}
