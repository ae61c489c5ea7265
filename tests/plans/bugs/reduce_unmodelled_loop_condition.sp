# expect: NOT EQUIVALENT at line 19
# Found by an adversarial review (2026-12-04): EQUIVALENT before (a size compared through a loop variable).
# an if on a loop variable times a size: i * B > 100 holds for i = 3 at B = 40, never at a reduced B < 34
dim B = 40, H = 4096

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B, H@dp]
  y = x * 2
  for i in 0..4 {
    if i * B > 100 {
      t = y + x
      y = t
    }
  }
  output y = y : [B, H@dp]
}
