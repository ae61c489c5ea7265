# expect: NOT EQUIVALENT at line 16
# Sums of sizes (2026-12-04): EQUIVALENT before with these options (H + 1 = K at the given sizes); a padding now sends the check to the real sizes.
# args: --dims H=5,K=6 --no-cross-check
# the mean of x padded by one zero: the plan divides by K, which is H + 1 at a reduction only
# (real H = 200, K = 100)
dim H = 200, K = 100
model m {
  input x : [H]
  t = pad(x, dim = 0, before = 0, after = 1)
  y = sum(t) / sum(t * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 2
  x : [H]
  output y = sum(x) / K
}
