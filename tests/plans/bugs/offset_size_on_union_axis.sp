# expect: NOT EQUIVALENT at line 21
# Offsets (session 28, helper-36; the default reduction): the plan's row 4 + 1 of the exact V is
# an exact sum; the model slices at A the rows of cross_entropy(reduction = none), an axis
# whose extent is a union's (not known) and inexact, on which a size term was not noted, so the
# default took A = 7 down to 5 (src/exec_pos.c sp_size_on_exact: an extent not known may hold
# an exact axis).
dim V = 16, A = 7, C = 5000, D = 6000
model m {
  input x : [V, C]
  input t : [V, D]
  l = cross_entropy(x, slice(t, 1, 0, C), reduction = none)
  y = slice(slice(l, 0, A, 2 * A), 0, 0, 1)
  output y
}
plan p of m {
  mesh dp = 1
  x : [V, C]
  t : [V, D]
  xs = slice(chunk(x, 4, 0, 1), 0, 1, 2)
  ts = slice(chunk(t, 4, 0, 1), 0, 1, 2)
  output y = cross_entropy(xs, slice(ts, 1, 0, C), reduction = none) : [1]
}
