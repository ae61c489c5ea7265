# expect: NOT EQUIVALENT at line 16
# A reduce_scatter over three axes of 2 (review of 2026-12-04, helper-26): blocks of B/8, rank
# (0, 0, 1) holds rows 32..63 of a real B = 256, its row 19 is row 51 for the model's row 40.
# EQUIVALENT at B = 168 before (blocks of 21). A collective cuts by its group's size.
dim B = 256, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh a = 2, b = 2, c = 2
  x : [B, H]
  r = reduce_scatter(x, 0, avg, [a, b, c])
  on a = 0, b = 0, c = 1 {
    output y = slice(r, 0, 19, 20) * 2 : [1, H]
  }
}
