# Found by an adversarial review (2026-12-04): NOT EQUIVALENT before (B % 3 at a reduced B); B keeps its real size now.
# a correct plan: real B % 3 = 2, so x * (B % 3) is the model's x * 2; reduced B % 3 differs
dim B = 4097, H = 64

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B, H]
  y = x * (0 + B % 3)
  output y = y : [B, H]
}
