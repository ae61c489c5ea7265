# expect: UNKNOWN
# args: --dims D=6
# regress/size_values_real_values_override_note.sp at D = 6: the indices of permute(z, [0, 3, 2, 1])
# were noted as extents, so the chunk piece of D/2 = 3 elements took 3 for its count, not 64
# (helper-62's review, find 3).  Only the lists of reshape, view, expand and broadcast_to are
# extents (src/ref/ref_exec.c attr_value); UNKNOWN now.
dim N = 1024, D = 128, A = 5, B = 7, C = 11
model m {
  input x : [N, D]
  input z : [N, A, B, C]
  t = x * 2
  y = sum(chunk(t, 2, 1, 0), dim = 1) / (D / 2)
  u = permute(z, [0, 3, 2, 1])
  output y
  output u
}
plan p of m {
  mesh dp = 2
  x : [N@dp, D]
  z : [N@dp, A, B, C]
  h = x * 4 ~ t : [N@dp, D]
  output y = mean(chunk(h / 2, 2, 1, 0), dim = 1) : [N@dp]
  output u = permute(z, [0, 3, 2, 1]) : [N@dp, C, B, A]
}
