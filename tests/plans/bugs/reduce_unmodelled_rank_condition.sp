# expect: NOT EQUIVALENT at line 17
# Found by an adversarial review (2026-12-04): EQUIVALENT before (a size compared with rank.dp * B).
# a rank-dependent if on a size: rank.dp * B > 100 holds on rank dp = 3 at B = 40 (120), at no rank
# for a reduced B below 34
dim B = 40, H = 4096

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 4
  x : [B, H@dp]
  if rank.dp * B > 100 {
    y = x * 3
  } else {
    y = x * 2
  }
  output y = y : [B, H@dp]
}
