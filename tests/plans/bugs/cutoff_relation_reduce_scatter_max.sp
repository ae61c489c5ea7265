# helper-70's find (docs/soundness.md, "Mesh cutoff"): reduce_scatter(x, max, dp) of a replicated
# x hands each rank its own rows (the max of copies is the copy), so 24 e4 of the ranks' local
# sums hid at dp = 64 checked as 3, where the rows were no member's own (only a layout's shard
# was). A split over a cut group now partitions its axis's dim over the axis (src/plan.c
# split_members): a monomial of five members exceeds the three checked, the real mesh is
# checked, where the difference is found.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 30
dim B = 512, R = 4
model m {
  input x : [B]
  input z : [B]
  g = reshape(x, [B/R, R])
  y = sum(g + g)
  output y, z
}
plan p of m {
  mesh dp = 64
  x : [B]
  z : [B@dp]
  xs = reduce_scatter(x, max, dp, dim=0)
  s = sum(xs)
  p1 = all_reduce(s, sum, dp)
  p2 = all_reduce(s * s, sum, dp)
  p3 = all_reduce(s * s * s, sum, dp)
  p4 = all_reduce(s * s * s * s, sum, dp)
  a = p1 * p1 * p2
  c = p2 * p2
  e = p1 * p1 * p1 * p1 - a - a - a - a - a - a + c + c + c + 8 * p1 * p3 - p4 - p4 - p4 - p4 - p4 - p4
  y = p1 + p1 + e
  output y = y : []
  output z = z : [B@dp]
}
