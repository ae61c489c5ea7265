# helper-73's find, through a reshape's -1 (session 42): [B/dp, -1] of a replicated [B] makes an
# axis of dp rows, nobody's own; a shape list with -1 and the mesh size in another element gives
# up the cut (src/reduce.c extent_of_axis): the real mesh is checked.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 24
dim B = 131072
model m {
  input x : [B]
  y = sum(x)
  output y
}
plan p of m {
  mesh dp = 16
  x : [B]
  xm = transpose(reshape(x, [B/dp, -1]), 0, 1)
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
