# dot_pairs_permuted.sp: a row-parallel matmul in which rank tp = 1 swaps the two halves of its
# rows of w, so its partial sums pair x[k] with w[sigma(k)]: every output element sees the same
# factors of x and of w as the model's, paired differently.  A dot product is one node whose
# arguments are its pairs (solver/expr.c sp_expr_dot): canonical order within a pair and among
# pairs, never across pairs; a form that sorted the factors of each side apart, or a rank key
# that did, would make rank 1 a renaming of rank 0 and the plan EQUIVALENT.
# expect: NOT EQUIVALENT at line 26
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
  if rank.tp == 1 {
    ws = concat(slice(w, 0, H/tp/2, H/tp), slice(w, 0, 0, H/tp/2), dim = 0)
  } else {
    ws = w
  }
  yp = matmul(x, ws)                ~ y : [B, N] partial(sum@tp)
  y = all_reduce(yp, sum, tp)
  output y = y : [B, N]
}
