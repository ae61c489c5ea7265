# expect: NOT EQUIVALENT at line 15
# A micro-batch written as a slice, then a literal row of it (review of 2026-12-04, helper-25):
# EQUIVALENT before at B = 44 (rows 11..21 of rank 0, row 9 is row 20; really row 25).
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 20, 21) * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  on dp = 0 {
    c = slice(x, 0, B/dp/2, B/dp)
    output y = slice(c, 0, 9, 10) * 2 : [1, H]
  }
}
