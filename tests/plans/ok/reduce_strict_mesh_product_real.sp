# The correct twin of bugs/reduce_strict_mesh_product_dataflow.sp: the batch really is dp * dp,
# so dividing by dp twice is the mean. A reduced size may equal a product of mesh sizes when its
# real value is that product (--strict-shapes keeps B at 4 here).
# args: --strict-shapes
dim B = 4, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H] partial(sum@dp)
  s = sum(x, dim = 0) / dp
  y = all_reduce(s, sum, dp) / dp
  output y = y : [H]
}
