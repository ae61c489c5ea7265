# expect: NOT EQUIVALENT at line 32
# A loop variable used only as a nested loop's bound: `for j in 60..l` runs l - 60 times, the
# comparison `l >= 60` in disguise, so layers 61..99 of L = 100 scale by l - 59.  The bound was
# no use of l (j inherited L's bounds, but j is never used), so L was checked at 3, where the
# inner loop never runs: EQUIVALENT by default (helper-48's review, session 32; 512 ranks put
# the real sizes past the reference executor).  A bound naming outer loop variables is a use of
# them: their loops' bounds that are sizes stay real (src/reduce.c push_loop; docs/soundness.md,
# "Shape reduction").

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
    a[l] = g[l] * w[l]
    for j in 60..l {
      a[l] += g[l] * w[l]
    }
    g[l+1] = a[l]
  }
  output h[L] = g[L] : [N@tp]
}
