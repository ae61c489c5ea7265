# expect: layout_reduce_scatter_indivisible.sp:12:7: error: reduce_scatter: dim 1 of size 3 is not divisible by 2 ranks
# reduce_scatter of a dim the group does not divide
dim B = 4, H = 3
model m {
  input x : [B, H]
  y = relu(x)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  z = reduce_scatter(x, 1, sum, tp)
  output y = z : [B, H@tp]
}
