# expect: NOT EQUIVALENT at line 44
# helper-77's review (session 43): EQUIVALENT by default before session 43; a causal mask with offset -4: a row keeps four keys only from S = 8 on; the reduction checked S = 5.
# Fixed in the mechanism (docs/soundness.md, "Relations among sums over a reduced dim"):
# a positional pattern (a causal mask's offset, top-k's ties) keeps elements apart, so the
# bound needs that many more (src/members.c sp_members_slack); a failing bound beside an
# atom of a sum over the dim is no longer excused; a stage that fails the bound is checked
# again at a size whose block holds its monomials (src/check.c regrow).
dim S = 1001
model m {
  input x : [S]
  input z : [S, S]
  f = causal_mask(z, offset = -4)
  p1 = sum(f * x, dim = 1)
  p2 = sum(f * x * x, dim = 1)
  p3 = sum(f * x * x * x, dim = 1)
  p4 = sum(f * x * x * x * x, dim = 1)
  nwt0 = p4
  nwt0d1 = nwt0 + nwt0
  nwt0d2 = nwt0d1 + nwt0d1
  nwc0 = nwt0d1 + nwt0d2
  nwt1 = p3 * p1
  nwt1d1 = nwt1 + nwt1
  nwt1d2 = nwt1d1 + nwt1d1
  nwt1d3 = nwt1d2 + nwt1d2
  nwc1 = nwt1d3
  nwt2 = p2 * p2
  nwt2d1 = nwt2 + nwt2
  nwc2 = nwt2 + nwt2d1
  nwt3 = p2 * p1 * p1
  nwt3d1 = nwt3 + nwt3
  nwt3d2 = nwt3d1 + nwt3d1
  nwc3 = nwt3d1 + nwt3d2
  nwt4 = p1 * p1 * p1 * p1
  nwc4 = nwt4
  e = nwc1 + nwc2 + nwc4 - nwc0 - nwc3
  y = p1 + e
  output y
}
plan p of m {
  mesh tp = 2
  x : [S]
  z : [S, S]
  f = causal_mask(z, offset = -4)
  y = sum(f * x, dim = 1)
  output y = y : [S]
}
