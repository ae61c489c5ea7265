# expect: NOT EQUIVALENT at line 16
# Found by an adversarial review (2026-12-04): EQUIVALENT before (B % 3 was no modelled size; B reduced to 14).
# if on B % 3: real B = 4096 (4096 % 3 = 1) takes the wrong branch; the reduced B does not
dim B = 4096, H = 64

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  if B % 3 == 1 {
    y = x * 3
  } else {
    y = x * 2
  }
  output y = y : [B@dp, H]
}
