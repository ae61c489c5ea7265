# expect: UNKNOWN: limit max_splits
# Found by an adversarial review (2026-12-04): with K reduced to 12 above E reduced to 5 the
# checker took the top-k of more than the lane as all ones and said EQUIVALENT (real K = 64 < E = 100:
# a real mask). Now k above its lane is refused as torch does, and a reduced check that meets it is
# run again at the real sizes, where the case split over 100 elements stops at its limit.
dim K = 64, E = 100

model m {
  input x : [E]
  input z : [K]
  y = x * 1
  w = z * 1
  output y, w
}

plan p of m {
  mesh dp = 4
  x : [E]
  z : [K@dp]
  y = x * topk_mask(x, k = K, dim = 0)
  w = z * 1
  output y = y : [E]
  output w = w : [K@dp]
}
