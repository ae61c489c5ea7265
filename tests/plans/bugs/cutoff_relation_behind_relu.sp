# helper-69's first find (docs/soundness.md, "Mesh cutoff"): 24 e4 of the batch rows, written
# through the all-reduced power sums, beside relu(p1), against the model's relu(sum(x)). e4 of
# three rows is 0, so at dp = 4096 checked as 3 (one row per rank) the two agree; the relu of a
# sum over B turned B's relations test off (a node taken as holding no element), and the rows
# were members of no cut axis. A row of a shard over a cut axis is now its member's own, and the
# cut axis's test refuses such nodes: the real mesh is checked, where the difference is found.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 26
dim B = 4096
model m {
  input x : [B]
  s = sum(x)
  y = relu(s)
  output y
}
plan p of m {
  mesh dp = 4096
  x : [B@dp]
  p1 = all_reduce(sum(x), sum, dp)
  p2 = all_reduce(sum(x * x), sum, dp)
  p3 = all_reduce(sum(x * x * x), sum, dp)
  p4 = all_reduce(sum(x * x * x * x), sum, dp)
  a = p1 * p1 * p2
  c = p2 * p2
  e = p1 * p1 * p1 * p1 - a - a - a - a - a - a + c + c + c + 8 * p1 * p3 - p4 - p4 - p4 - p4 - p4 - p4
  y = relu(p1) + e
  output y = y : []
}
