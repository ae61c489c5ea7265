# expect: NOT EQUIVALENT at line 17
# Sums of sizes (2026-12-04): EQUIVALENT before with these options (H - 1 = K at the given sizes); a slice bound counted from the end now sends the check to the real sizes.
# args: --dims H=7,K=6 --no-cross-check
# the mean of x without its last element (a slice to -1): the plan divides by K, which is H - 1
# at a reduction only (real H = 200, K = 100)
dim H = 200, K = 100
model m {
  input x : [H]
  t = slice(x, 0, 0, -1)
  y = sum(t) / sum(t * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 2
  x : [H]
  t = slice(x, 0, 0, -1)
  output y = sum(t) / K
}
