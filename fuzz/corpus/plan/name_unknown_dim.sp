# expect: name_unknown_dim.sp:5:17: error: unknown dimension or integer 'Q'
# a shape naming an undeclared dimension
dim B = 4
model m {
  input x : [B, Q]
  y = relu(x)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, Q]
  output y = x : [B, Q]
}
