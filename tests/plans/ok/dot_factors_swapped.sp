# dot_factors_swapped.sp: the same matmul written three ways: y = x w on the model; on the plan a
# row-parallel sum of partial dot products (an n-ary sum of dot nodes against the model's one dot
# node), computed as the transpose of w^T x^T (each product's factors in the other order).  Dot
# nodes order the factors within each pair and the pairs (solver/expr.c sp_expr_dot), and a
# stage's import writes them out as sums of products: EQUIVALENT, and rank 1 keyed as a renaming
# of rank 0.
dim B = 4, H = 8, N = 6

model m {
  input x : [B, H]
  param w : [H, N]
  y = matmul(x, w)
  output y
}

plan p of m {
  mesh tp = 2
  x : [B, H@tp]
  w : [H@tp, N]
  ypt = matmul(transpose(w, 0, 1), transpose(x, 0, 1))
  yp = transpose(ypt, 0, 1)          ~ y : [B, N] partial(sum@tp)
  y = all_reduce(yp, sum, tp)
  output y = y : [B, N]
}
