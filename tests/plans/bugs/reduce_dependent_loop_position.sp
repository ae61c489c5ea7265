# expect: NOT EQUIVALENT at line 16
# A loop whose bounds are an outer loop's variable (for j in i..i+1; review of 2026-12-04,
# helper-28): j was evaluated at 0 only, and the plan's row 4 stood for the model's row 129 at
# B = 6. Its range is now the outer values' range.
dim B = 256, H = 2048
model m {
  input x : [B, H]
  y = slice(chunk(x, 2, 0, 1), 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  for i in 4..5 {
    for j in i..i+1 {
      output y = slice(x, 0, j, j + 1) * 2 : [1, H]
    }
  }
}
