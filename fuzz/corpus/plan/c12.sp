# c12.sp: the counterexample to TrainVerify's single-index shape reduction (Theorem C.12):
# f(x) = [x0 + x1, x0 + x1] and g(x) = [x0 + x1, 2*x0] agree at index 0 only.  shardproof
# checks every element, so this plan is NOT EQUIVALENT at element [1].
# expect: NOT EQUIVALENT at line 20

dim N = 2

model f {
  input x : [N]
  s = sum(x, dim=0, keepdim=1)
  y = concat(s, s, dim=0)
  output y
}

plan g of f {
  mesh r = 1
  x : [N]
  s = sum(x, dim=0, keepdim=1)
  t = scale(slice(x, dim=0, start=0, end=1), 2)
  y = concat(s, t, dim=0)
  output y = y : [N]
}
