# expect: NOT EQUIVALENT at line 12
# The same with % (review of 2026-12-04, helper-26): rank.cp*(2+1) % 100 is 3 on rank 1.
dim S = 64, H = 2048
model m {
  input x : [S, H]
  y = x * 2
  output y
}
plan p of m {
  mesh cp = 2
  x : [S, H]
  output y = slice(x, 0, rank.cp*(2+1) % 100, rank.cp*(2+1) % 100 + S/cp) * 2 : [S@cp, H]
}
