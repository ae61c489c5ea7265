# expect: on_axis_twice.sp:15:14: error: mesh axis 'tp' is given twice in this 'on'
# An 'on' that gives one axis twice selects no rank (the block would never run).
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
  on tp = 0, tp = 1 {
    g = matmul(x, w) ~ h : [B, H@tp]
  }
  h = matmul(x, w) ~ h : [B, H@tp]
  y = 2 * h
  output y = all_gather(y, tp, dim = 1) : [B, H]
}
