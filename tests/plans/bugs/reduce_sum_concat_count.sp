# expect: NOT EQUIVALENT at line 17
# Sums of sizes (2026-12-04): EQUIVALENT before under --dims B=5,S=6,F=11 --no-cross-check (B + S = F at those sizes only).
# the mean of a concatenation of a [B] and an [S] tensor: the plan divides by F, which is B + S
# at a reduction only (real 40 + 24 = 64, F = 60)
dim B = 40, S = 24, F = 60
model m {
  input a : [B]
  input b : [S]
  c = concat(a, b, dim = 0)
  y = sum(c) / sum(c * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 2
  a : [B]
  b : [S]
  output y = (sum(a) + sum(b)) / F
}
