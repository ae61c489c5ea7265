# Newton's identity at three members over the parts of a pending reduction (docs/soundness.md,
# "Mesh cutoff"): w is partial(sum@dp), so each rank holds a part; the plan all-reduces the
# parts' powers and combines them into 6 p1^2 p2 - 3 p2^2 - 8 p1 p3 + 6 p4, which is w^4 at three
# members only. Under --mesh-cutoff dp = 16 is checked as 3; the sums of the parts' powers are
# no whole decomposition, so they count (the last part shares the others' monomials) and the
# real mesh is checked, where the difference is found.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 24
dim H = 8
model m {
  input w : [H]
  y = w * w * w * w
  output y
}
plan p of m {
  mesh dp = 16
  w : [H] partial(sum@dp)
  p1 = all_reduce(w, sum, dp)
  p2 = all_reduce(w * w, sum, dp)
  p3 = all_reduce(w * w * w, sum, dp)
  p4 = all_reduce(w * w * w * w, sum, dp)
  a = p1 * p1 * p2
  c = p2 * p2
  y = a + a + a + a + a + a - c - c - c - 8 * p1 * p3 + p4 + p4 + p4 + p4 + p4 + p4
  output y = y : [H]
}
