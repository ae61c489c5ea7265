# expect: NOT EQUIVALENT at line 26
# A loop variable in a subscript that is not affine: `w[l % 60]` is w[l] at L = 3 and reads
# w[0..39] again for layers 60..99 of L = 100.  Subscripts were exempt from the loop-variable
# rule as the array's own structure, so L was checked at 3: EQUIVALENT by default (helper-48's
# review, session 32).  Only a subscript affine in one variable (l, l + 1, L - 1 - l, 2*l + 1)
# is exempt; any other form is a use (src/reduce.c var_uses, affine_vars).

dim L = 100, N = 4
model m {
  input x : [N]
  param w[L] : [N]
  h[0] = x
  for l in 0..L {
    h[l+1] = h[l] * w[l]
  }
  output h[L]
}
plan p of m {
  mesh dp = 256, tp = 2
  x : [N@tp]
  for l in 0..L { w[l] : [N@tp] }
  g[0] = x
  for l in 0..L {
    g[l+1] = g[l] * w[l % 60]
  }
  output h[L] = g[L] : [N@tp]
}
