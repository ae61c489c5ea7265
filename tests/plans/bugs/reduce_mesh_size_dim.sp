# A mesh size written as a dim (mesh dp = D) is never reduced: the plan runs on its real 4 ranks,
# and rank 3's bug executes.
# expect: NOT EQUIVALENT at line 13
dim D = 4, B = 8
model m {
  input x : [B]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = D
  x : [B@dp]
  on dp = 3 { z = x * 3 }
  on dp = 0 { z = x * 2 }
  on dp = 1 { z = x * 2 }
  on dp = 2 { z = x * 2 }
  output y = z : [B@dp]
}
