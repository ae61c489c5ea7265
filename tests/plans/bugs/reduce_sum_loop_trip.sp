# expect: NOT EQUIVALENT at line 16
# Sums of sizes (2026-12-04): EQUIVALENT before under --dims S=5,H=11,K=6 --no-cross-check (the trip count H - S = K at those sizes only).
# a loop that runs H - S times accumulates x where the model multiplies by K, which is H - S
# at a reduction only (real 200 - 64 = 136, K = 100)
dim S = 64, H = 200, K = 100
model m {
  input x : [K]
  y = x * K
  output y
}
plan p of m {
  mesh dp = 2
  x : [K@dp]
  acc = x * 0
  for i in S..H {
    acc = acc + x
  }
  output y = acc : [K@dp]
}
