# expect: NOT EQUIVALENT at line 23
# A count taken by a quotient over an axis whose extent is not known (helper-58's review of the
# sizes-as-values change, find 3): sum(r) / mean(r) over r = reshape(c, [-1]) is the number of
# c's elements, B * C = 400 at the real sizes, against the model's 1 + 3.  At the checked sizes
# the merged axis's monomial is not known, the mean divided by the count it saw (4 at B = C = 2)
# and the plan was EQUIVALENT (no sum of like terms, so no count for the count test).  A count
# not known at the real sizes now sends the check there (src/ops_base.c count_real,
# SP_CLAMP_COUNT).  Checked without the cross-check: the checker alone must not prove it.
# args: --no-cross-check
dim N = 7, B = 20, C = 20
model m {
  input x : [N]
  input c : [B, C]
  s = sum(sum(c, dim = 1), dim = 0)
  y = (x * 1 + x * 3) * s / s
  output y
}
plan p of m {
  mesh dp = 1
  x : [N]
  c : [B, C]
  r = reshape(c, [-1])
  y = x * sum(r, dim = 0) / mean(r, dim = 0)
  output y = y : [N]
}
