# expect: NOT EQUIVALENT at line 14
# A reshape's extents given by keyword (shape = [2, -1, H]; review of 2026-12-04, helper-29):
# the 2 was taken for a position, not a count, so the block B/2 was not kept above row 17.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 16, 17) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  r = reshape(x, shape = [2, -1, H])
  output y = reshape(slice(slice(r, 0, 1, 2), 1, 6, 7), [1, H]) * 2 : [1, H]
}
