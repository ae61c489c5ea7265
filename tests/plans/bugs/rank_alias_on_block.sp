# 'on dp = 1 { y = a }' rebinds y on dp = 1 only; rank 0 keeps its (wrong) y, and the report names rank 0's line
# expect: NOT EQUIVALENT at line 12
dim N = 4
model m {
  input a : [N]
  y = a * 2
  output y
}
plan p of m {
  mesh dp = 2
  a : [N]
  y = a * 3
  on dp = 1 {
    y = a * 2
  }
  on dp = 0 {
    t = y
  }
  on dp = 1 {
    y = a
  }
  output y = y : [N]
}
