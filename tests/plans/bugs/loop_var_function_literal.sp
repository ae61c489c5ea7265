# expect: NOT EQUIVALENT at line 33
# A loop variable passed to a user function that compares it with a literal: layers l >= 50
# of L = 100 are scaled by 2.  At a reduced L the branch never runs (helper-44's review, session
# 31): a loop variable used other than as an array subscript keeps its size bounds real
# (src/reduce.c var_uses), here through the call's argument.
dim L = 100, N = 4

func step(g, w, i) {
  if i >= 50 {
    return g * w * 2
  }
  return g * w
}

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
    g[l+1] = step(g[l], w[l], l)
  }
  output h[L] = g[L] : [N@tp]
}
