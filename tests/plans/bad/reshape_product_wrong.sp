# expect: reshape_product_wrong.sp:14:17: error: reshape: cannot reshape [96] (96 elements) into [8, 8] (64 elements)
# ok/reshape_product_of_dims.sp with [B, B]: 64 elements for 96 at the real sizes too.  The
# reshape fails at the reduced sizes, the real sizes are checked, and the error is the one
# there, with the sizes the user wrote.
dim N = 96, B = 8, S = 12
model m {
  input x : [N]
  y = mean(x)
  output y
}
plan p of m {
  mesh dp = 1
  x : [N]
  y = mean(mean(reshape(x, [B, B]), dim = 1), dim = 0)
  output y = y : []
}
