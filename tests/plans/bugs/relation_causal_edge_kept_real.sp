# expect: NOT EQUIVALENT at line 19
# helper-91's review (session 46): the same with K = 5 kept real and T checked at 3: every row t >= 4 is past the last key at the real sizes only.
# EQUIVALENT by default at 100002 (regress/relation_causal_edge_kept_real_large.sp). docs/soundness.md, 'Positional patterns'.
dim T = 8
dim K = 5
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
