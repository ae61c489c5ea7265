# Newton's identity at three members over the batch rows (docs/soundness.md, "Mesh cutoff"):
# with one row per rank, p_i = all_reduce(sum(x^i), sum, dp) and
# y = 6 p1^2 p2 - 3 p2^2 - 8 p1 p3 + 6 p4 (written with repeated terms, so that 3 stays a
# possible checked size) equals the model's (sum x)^4 exactly when e4 of the rows is 0: at three
# members, not at 4096. Under --mesh-cutoff dp = 4096 is checked as 3 (B = 3); the relations test
# bounds the rows of B a monomial of y holds (four, through p1^2 p2 and p1 p3) by B's block (one
# row per rank), so the real mesh is checked, where the difference is found.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 26
dim B = 4096
model m {
  input x : [B]
  s = sum(x)
  y = s * s * s * s
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
  y = a + a + a + a + a + a - c - c - c - 8 * p1 * p3 + p4 + p4 + p4 + p4 + p4 + p4
  output y = y : []
}
