# expect: NOT EQUIVALENT at line 16
# Literal positions in implicit blocks (review of 2026-12-04, helper-25): EQUIVALENT before at B = 42.
# chunk(x, 2, 0, 1) of a real B = 64 holds rows 32..63, so its row 19 is row 51, not the model's
# row 40; at B = 42 (chunk of 21) it is row 40. Every block a size can be cut into stays above
# every literal position or keeps its real size (src/reduce.c blocks_kept).
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(x, 2, 0, 1)
  output y = slice(c, 0, 19, 20) * 2 : [1, H]
}
