# expect: NOT EQUIVALENT at line 22
# A nested loop `for j in 0..l` inside `for l in 0..L` compares j with a literal: j's values
# are the real run's only with L real, so j inherits the size bounds of l's loop
# (src/reduce.c push_loop; helper-44's review, session 31: EQUIVALENT by default at L = 3).
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
  for l in 0..L { g[l+1] = g[l] * w[l] }
  k = g[L]
  for l in 0..L { for j in 0..l { if j == 60 { k = k * 2 } } }
  output h[L] = k : [N@tp]
}
