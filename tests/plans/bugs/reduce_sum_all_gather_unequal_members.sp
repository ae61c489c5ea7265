# expect: NOT EQUIVALENT at line 22
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before (docs/soundness.md, "Sums of sizes").
# all_gather of members with unequal extents (B, S, 0): the gathered extent B + S is a sum of
# sizes that neither the static reading nor a run-time check sees (src/mesh.c all_gather sets no
# "clamped").  Reduced B=2, S=5, F=7 (B + S = F); real 6 + 40 = 46, model F = 70000.
dim B = 6, S = 40, F = 70000
model m {
  input x : [B]
  input a : [S]
  input w : [F]
  y = x * sum(w * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 3
  x : [B]
  a : [S]
  on dp = 0 { t = x }
  on dp = 1 { t = a }
  on dp = 2 { t = slice(x, 0, 0, 0) }
  g = all_gather(t, 0, dp)
  output y = x * sum(g * 0 + 1)
}
