# definedness_normalize_then_rescale.sp: the plan normalizes each row by its norm and scales it
# back (a common refactoring slip); the result is the row itself wherever it is defined, but an
# all-zero row gives 0/0.  The model is defined everywhere.
# expect: NOT EQUIVALENT at line 19

dim B = 4, H = 8

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p_tp2 of m {
  mesh tp = 2
  x : [B, H@tp]
  n = sqrt(all_reduce(sum(x * x, dim = 1, keepdim = 1), sum, tp))
  u = x / n
  y = u * n * 2
  output y = y : [B, H@tp]
}
