# helper-69's second find: 24 e4 of the ranks' local sums (8 rows per rank at the checked B =
# 24), beside the correct sum. B's block is 8, so B's relations test let a monomial hold the
# four rows of four ranks, but only three ranks exist at dp = 4096 checked as 3. The rows of a
# shard over a cut axis now hold their member, and a monomial of five members (the model's side
# through the compared rank) exceeds the three checked: the real mesh is checked.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 26
dim B = 32768, R = 4
model m {
  input x : [B]
  g = reshape(x, [B/R, R])
  y = sum(g + g)
  output y
}
plan p of m {
  mesh dp = 4096
  x : [B@dp]
  s = sum(x)
  p1 = all_reduce(s, sum, dp)
  p2 = all_reduce(s * s, sum, dp)
  p3 = all_reduce(s * s * s, sum, dp)
  p4 = all_reduce(s * s * s * s, sum, dp)
  a = p1 * p1 * p2
  c = p2 * p2
  e = p1 * p1 * p1 * p1 - a - a - a - a - a - a + c + c + c + 8 * p1 * p3 - p4 - p4 - p4 - p4 - p4 - p4
  y = p1 + p1 + e
  output y = y : []
}
