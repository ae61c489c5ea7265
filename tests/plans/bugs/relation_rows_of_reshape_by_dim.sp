# helper-75's third find (session 42): reshape(x, [R, B/R]) of a replicated x makes R rows of
# B, with R reduced to 3; B's relations test bounded a monomial's elements of B by the block
# (B/R = 5) and not by the number of blocks, so 120 e5 of the row sums (0 at three rows) passed.
# The other side of a split is a block too when the reduction made it smaller (src/members.c
# sp_members_block, split_shrank): the real sizes are checked. By default with an output that
# made the reference run skip, it was EQUIVALENT.
# args: --no-cross-check
# expect: NOT EQUIVALENT at line 62
dim R = 8, B = 40
model m {
  input x : [B]
  y = sum(x)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B]
  xm = reshape(x, [R, B/R])
  s = sum(xm, dim = 1)
  p1 = sum(s)
  p2 = sum(s * s)
  p3 = sum(s * s * s)
  p4 = sum(s * s * s * s)
  p5 = sum(s * s * s * s * s)
  t0 = p1 * p1 * p1 * p1 * p1
  c0 = t0
  t1 = p1 * p1 * p1 * p2
  t1d0 = t1 + t1
  t1d1 = t1d0 + t1d0
  t1d2 = t1d1 + t1d1
  c1 = t1d0 + t1d2
  t2 = p1 * p2 * p2
  t2d0 = t2 + t2
  t2d1 = t2d0 + t2d0
  t2d2 = t2d1 + t2d1
  c2 = t2 + t2d0 + t2d1 + t2d2
  t3 = p1 * p1 * p3
  t3d0 = t3 + t3
  t3d1 = t3d0 + t3d0
  t3d2 = t3d1 + t3d1
  t3d3 = t3d2 + t3d2
  c3 = t3d1 + t3d3
  t4 = p2 * p3
  t4d0 = t4 + t4
  t4d1 = t4d0 + t4d0
  t4d2 = t4d1 + t4d1
  t4d3 = t4d2 + t4d2
  c4 = t4d1 + t4d3
  t5 = p1 * p4
  t5d0 = t5 + t5
  t5d1 = t5d0 + t5d0
  t5d2 = t5d1 + t5d1
  t5d3 = t5d2 + t5d2
  c5 = t5d0 + t5d1 + t5d2 + t5d3
  t6 = p5
  t6d0 = t6 + t6
  t6d1 = t6d0 + t6d0
  t6d2 = t6d1 + t6d1
  t6d3 = t6d2 + t6d2
  c6 = t6d2 + t6d3
  e = c0 + c2 + c3 + c6 - c1 - c4 - c5
  output y = p1 + e : []
}
