# expect: NOT EQUIVALENT at line 25
# A masked mean over the keys query 2 sees (offset 2: keys 0..4 of S = 40) against the plan's
# mean over all S keys: equal at the checked S = 5 only, where that row of the mask is all ones
# (helper-61's review, session 38; was EQUIVALENT by default and with --no-cross-check: the
# mask's row sum was the constant 1 times the real count).  bugs/size_values_causal_row_sum.sp.
dim S = 40, M = 70000
func ident(t, n) {
  return t
}
model m {
  input a : [S, S]
  input x : [S, S]
  input w : [M]
  mk = causal_mask(a, offset = 2)
  pooled = sum(mk * x, dim = 1) / sum(mk, dim = 1)
  y = slice(pooled, 0, 2, 3)
  u = w * 2
  output y, u
}
plan p of m {
  mesh dp = 1
  a : [S, S]
  x : [S, S]
  w : [M]
  y = slice(mean(x, dim = 1), 0, 2, 3)
  u = ident(w, M) * 2
  output y = y : [1]
  output u = u : [M]
}
