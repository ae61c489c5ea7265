# Context-parallel rope with full [S, D] tables (review of 2026-12-04, helper-28): refused before
# ("rope: last dimension 7 must be even" at the reduced sizes); an odd reduced D now grows.
dim B = 64, S = 2048, NH = 32, D = 128
model m {
  input x : [B, NH, S, D]
  input c : [S, D]
  input s : [S, D]
  y = rope(x, c, s)
  output y
}
plan p of m {
  mesh cp = 2
  x : [B, NH, S@cp, D]
  c : [S@cp, D]
  s : [S@cp, D]
  output y = rope(x, c, s) : [B, NH, S@cp, D]
}
