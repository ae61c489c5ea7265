# expect: NOT EQUIVALENT at line 16
# Found by an adversarial review (2026-12-04): EQUIVALENT before (B^2 was no modelled size).
# if on B^2: real B = 16 (256 > 200) takes the wrong branch; the reduced B does not
dim B = 16, H = 8192

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  if B^2 > 200 {
    y = x * 3
  } else {
    y = x * 2
  }
  output y = y : [B@dp, H]
}
