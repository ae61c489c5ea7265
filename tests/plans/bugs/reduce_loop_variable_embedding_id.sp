# expect: NOT EQUIVALENT at line 16
# A loop variable as an embedding id (review of 2026-12-04, helper-27): ids = [i] with i = 13
# for the model's row 33 of a real V = 64. EQUIVALENT at V = 24 before (only slice-like operators'
# arguments were evaluated; now every argument but a value's: src/reduce.c value_arg).
dim V = 64, H = 2048
model m {
  param table : [V, H]
  y = slice(chunk(table, 2, 0, 1), 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  table : [V, H]
  for i in 0..14 {
    if i == 13 {
      output y = embedding(table, ids = [i], shape = [1]) * 2 : [1, H]
    }
  }
}
