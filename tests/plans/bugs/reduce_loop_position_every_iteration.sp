# expect: NOT EQUIVALENT at line 16
# A position i*(10-i) whose largest value is no first or last iteration's (review of 2026-12-04,
# helper-28): every iteration of a loop is evaluated now (at most 1024 values, else every size
# stays real).
dim B = 256, H = 64
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 0..10 {
    if i == 4 {
      output y = slice(x, 0, i*(10-i), i*(10-i) + 1) * 2 : [1, H]
    }
  }
}
