# expect: NOT EQUIVALENT at line 14
# A rank offset written with a power (review of 2026-12-04, helper-26): rank.cp^1*(2+1) is 3 on
# rank 1, where its shard starts at row 32. EQUIVALENT at S = 6 before (the evaluation of rank
# arithmetic gave up on ^; now it follows ^ and %, and gives every literal otherwise).
dim S = 64, H = 2048
model m {
  input x : [S, H]
  y = x * 2
  output y
}
plan p of m {
  mesh cp = 2
  x : [S, H]
  output y = slice(x, 0, rank.cp^1*(2+1), rank.cp^1*(2+1) + S/cp) * 2 : [S@cp, H]
}
