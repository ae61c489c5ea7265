# expect: NOT EQUIVALENT at line 18
# bugs/size_values_causal_masked_mean.sp without the input that keeps the reference executor out
# (S = 300): EQUIVALENT with --no-cross-check before session 38, and NOT EQUIVALENT by default only
# through the second reference run; now the count test sends it to the real sizes.
dim S = 300
model m {
  input a : [S, S]
  input x : [S, S]
  mk = causal_mask(a, offset = 2)
  pooled = sum(mk * x, dim = 1) / sum(mk, dim = 1)
  y = slice(pooled, 0, 2, 3)
  output y
}
plan p of m {
  mesh dp = 1
  a : [S, S]
  x : [S, S]
  y = slice(mean(x, dim = 1), 0, 2, 3)
  output y = y : [1]
}
