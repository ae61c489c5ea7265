# expect: NOT EQUIVALENT at line 20
# bugs/loop_var_literal_branch.sp with the comparison inside a value, `(l >= 50)`, instead of
# an `if` (helper-44's review, session 31).
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
  for l in 0..L { g[l+1] = g[l] * w[l] * (1 + (l >= 50)) }
  output h[L] = g[L] : [N@tp]
}
