# expect: NOT EQUIVALENT at line 18
# Found by an adversarial review (2026-12-04): EQUIVALENT before (a loop's trip count B % 5).
# a loop whose trip count is B % 5: real B = 4096 -> 1 iteration (wrong), reduced may give 0
dim B = 4096, H = 64

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  y = x * 2
  for i in 0..(B % 5) {
    y2 = y + x
    y = y2
  }
  output y = y : [B@dp, H]
}
