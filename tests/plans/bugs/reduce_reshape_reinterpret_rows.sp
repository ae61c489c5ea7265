# expect: NOT EQUIVALENT at line 16
# reshape(x, [H, B]) of x : [B, H] reads rows of one size as rows of another (review of
# 2026-12-04, helper-29): r[1, 2] is flat element B + 2, x[1, 0] only where B + 2 = H (B = 5,
# H = 7). A reshape that is no split or merge of dims sends a program with literal positions to
# the real sizes (src/ops_shape.c aligned).
dim B = 64, H = 256
model m {
  input x : [B, H]
  y = slice(slice(x, 0, 1, 2), 1, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  r = reshape(x, [H, B])
  output y = slice(slice(r, 0, 1, 2), 1, 2, 3) * 2 : [1, 1]
}
