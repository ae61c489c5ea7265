# expect: UNKNOWN
# Correct at its real sizes (N=1024 D=128 A=5 B=7 C=11: the plan's mean over the first D/2 = 64
# columns of h/2 = 2x is the model's sum over them / (D/2)); only the lineage annotation h ~ t is
# wrong (a spurious stage).  The lifting runs the reference executor at the checked sizes with
# --real-values, whose counts come from the extents the program writes: it noted the file's
# C = 11 beside the override C = 7, and the plan's chunk piece of D/2 = 11 elements (checked D =
# 22), never written, took 11 for its count instead of 64: NOT EQUIVALENT with a false witness
# (helper-62's review, session 38).  An overridden dim notes its run size only (src/ref/ref.c
# setup_dims); the piece's count is not known, the run is refused and the real sizes decide.
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
