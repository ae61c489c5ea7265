# helper-68's third find: a replicated w gathered over dp has an axis whose positions are the
# members, and split(g, H, 0, i) picks member i's part. At dp checked as 3, members 0, 1 and 2
# are all of them and a + b + c is the whole decomposition of w, so the plan's p0 + p1 + p2 + w
# (at the real dp = 16) matched the model's 2w. Such a gather now checks the real mesh
# (src/plan.c members_positions), where the difference is found.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 21
dim H = 64
model m {
  input w : [H]
  y = w + w
  output y
}
plan p of m {
  mesh dp = 16
  w : [H] partial(sum@dp)
  g = all_gather(w, 0, dp)
  a = split(g, H, 0, 0)
  b = split(g, H, 0, 1)
  c = split(g, H, 0, 2)
  y = a + b + c + all_reduce(w, sum, dp)
  output y = y : [H]
}
