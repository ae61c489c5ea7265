# expect: NOT EQUIVALENT at line 13
# A reshape to a dim extent ([NM, -1, H]) cuts B into blocks of B/NM (review of 2026-12-04,
# helper-28): row 6 stood for the model's row 33 at B = 10. Sizes in a reshape's list divide too.
dim B = 64, H = 2048, NM = 2
model m {
  input x : [B, H]
  y = slice(slice(reshape(x, [NM, -1, H]), 0, 1, 2), 1, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  output y = reshape(slice(x, 0, 6, 7) , [1, 1, H]) * 2 : [1, 1, H]
}
