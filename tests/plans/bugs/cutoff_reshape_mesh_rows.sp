# helper-73's find (session 42): a replicated x reshaped to [dp, B/dp] has dp rows that are
# nobody's own, so dp's relations test never saw them and B's test bounds a monomial's rows by
# the block (5 at B = 15), not the number of blocks: 24 e4 of the row sums is 0 at dp = 3 and not
# at dp = 16, and the plan was EQUIVALENT under --mesh-cutoff. A mesh size as an extent or a
# count (here the reshape's [dp, B/dp]) now gives up the cut: the real mesh is checked.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 26
dim B = 131072
model m {
  input x : [B]
  y = sum(x)
  output y
}
plan p of m {
  mesh dp = 16
  x : [B]
  xm = reshape(x, [dp, B/dp])
  s = sum(xm, dim = 1)
  p1 = sum(s)
  p2 = sum(s * s)
  p3 = sum(s * s * s)
  p4 = sum(s * s * s * s)
  a = p1 * p1 * p2
  c = p2 * p2
  e = p1 * p1 * p1 * p1 - a - a - a - a - a - a + c + c + c + 8 * p1 * p3 - p4 - p4 - p4 - p4 - p4 - p4
  output y = p1 + e : []
}
