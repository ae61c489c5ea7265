# expect: name_dim_twice.sp:3:12: error: dimension 'B' is declared twice
# a dimension declared twice
dim B = 4, B = 6
model m {
  input x : [B, H]
  y = relu(x)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  output y = x : [B, H]
}
