# expect: NOT EQUIVALENT at line 35
# fuzz: not a seed (a documented open hole: tests/plans/open/relation_complement_gt3d_k2.sp is its padded twin,
# EQUIVALENT by default; here the reference executor's run at the real sizes, 8 or 9, finds the difference)
# helper-88's review (session 45): complemented offset-0 causal masks composed over three dims of equal sizes.
dim T = 8
dim S = 8
dim U = 8
model m {
  input x : [U]
  input c : [1]
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  g = gt(matmul(f1, f2), 0)
  p1 = sum(g * unsqueeze(x, 0), dim = 1)
  p2 = sum(g * unsqueeze(x * x, 0), dim = 1)
  tt1 = p2
  tt2 = p1*p1
  e = tt2 - tt1
  y = p1 + e
  output y
}
plan p of m {
  mesh tp = 2
  x : [U]
  c : [1]
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  g = gt(matmul(f1, f2), 0)
  p1 = sum(g * unsqueeze(x, 0), dim = 1)
  p2 = sum(g * unsqueeze(x * x, 0), dim = 1)
  yy = p1
  output y = yy : [T]
}

