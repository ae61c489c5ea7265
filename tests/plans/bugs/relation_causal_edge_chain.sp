# expect: NOT EQUIVALENT at line 28
# helper-91's review (session 46): a chain t < s < u on one dim T in the model, through s on a dim K in the plan (strict masks on [T, K] and [K, T]): the terms with s >= K are missing at the real sizes; both sums over T had one mask_ext, so the product took the larger count.
# EQUIVALENT by default at 100002 (regress/relation_causal_edge_chain_large.sp). docs/soundness.md, 'Positional patterns'.
dim T = 8
dim K = 6
model m {
  input w : [T]
  input x : [T]
  input c : [1]
  z = expand(c * 0 + 1, [T, T])
  f = z - causal_mask(z, offset = 0)
  p = sum(f * unsqueeze(w, 1), dim = 0)
  q = sum(f * unsqueeze(x, 0), dim = 1)
  r = sum(p * q)
  output r
}
plan p of m {
  mesh tp = 2
  w : [T]
  x : [T]
  c : [1]
  g1 = expand(c * 0 + 1, [T, K])
  f1 = g1 - causal_mask(g1, offset = 0)
  g2 = expand(c * 0 + 1, [K, T])
  f2 = g2 - causal_mask(g2, offset = 0)
  p2 = sum(f1 * unsqueeze(w, 1), dim = 0)
  q2 = sum(f2 * unsqueeze(x, 0), dim = 1)
  r2 = sum(p2 * q2)
  output r = r2 : []
}
