# expect: NOT EQUIVALENT at line 19
# helper-91's review (session 46): a causal pattern on [T, K] of two dims (T real 100002 > K real 100000) reduced to T = 3 < K = 25000: amax over K of the strict mask is [t < K - 1], 0 on the rows past the last key, which the checked sizes do not have.
# EQUIVALENT by default at 100002 (regress/relation_causal_edge_rows_large.sp). docs/soundness.md, 'Positional patterns'.
dim T = 8
dim K = 6
model m {
  input w : [T]
  input c : [1]
  y = w * 1
  output y
}
plan p of m {
  mesh tp = 2
  w : [T]
  c : [1]
  z = expand(c * 0 + 1, [T, K])
  f = z - causal_mask(z, offset = 0)
  e = amax(f, dim = 1)
  y2 = w * e
  output y = y2 : [T]
}
