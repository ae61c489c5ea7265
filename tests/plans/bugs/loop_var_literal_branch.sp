# expect: NOT EQUIVALENT at line 33
# A loop variable compared with a literal: layers l >= 50 of L = 100 multiply by an extra 2.
# The literal met only the loop variable, so it was no size, and L was checked at 3, where the
# branch never runs: EQUIVALENT by default (helper-44's review, session 31; the 512 ranks put
# the real sizes past the reference executor).  A loop variable used other than as an array
# subscript (a condition, a value, a call's argument, a rank coordinate) keeps the bounds of its
# loop that are sizes real (src/reduce.c var_uses; docs/soundness.md, "Shape reduction").

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
    if l >= 50 {
      g[l+1] = g[l] * w[l] * 2
    } else {
      g[l+1] = g[l] * w[l]
    }
  }
  output h[L] = g[L] : [N@tp]
}
