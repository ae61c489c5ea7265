# expect: NOT EQUIVALENT at line 17
# reduce_equal_sizes_apart_wrong.sp: the mirror of ok/reduce_equal_sizes_apart.sp with a real
# difference: `x * (H/4)` is 2 where the model scales by K = 4.  At the checked sizes the
# difference shows too; the reference executor reproduces it at the real sizes, so the witness
# printed is one at the real sizes.
dim H = 8, K = 4

model m {
  input x : [K]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 2
  x : [K]
  y = x * (H/4)
  output y = y : [K]
}
