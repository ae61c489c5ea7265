# expect: UNKNOWN
# args: --dims D=70,C=11
# regress/size_values_real_values_override_note.sp at hand-chosen sizes: the file's C = 35 noted
# beside C = 11 (helper-62's review, find 2); UNKNOWN now.
dim N = 1024, D = 128, C = 35
model m {
  input x : [N, D]
  input g : [N, C]
  t = x * 2
  y = sum(chunk(t, 2, 1, 0), dim = 1) / (D / 2)
  u = g * 3
  output y
  output u
}
plan p of m {
  mesh dp = 2
  x : [N@dp, D]
  g : [N@dp, C]
  h = x * 4 ~ t : [N@dp, D]
  output y = mean(chunk(h / 2, 2, 1, 0), dim = 1) : [N@dp]
  output u = g * 3 : [N@dp, C]
}
