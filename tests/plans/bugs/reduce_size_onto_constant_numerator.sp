# A size used as a value standing for the numerator of a constant: the model scales by 3e-4, the
# plan by Q * 1e-4 with Q = 50 (5e-3 at the real sizes). Before 2026-12-02 the reduction kept
# sizes used as values apart from integer constants and from the denominators of fractions
# (10000 here) but not from their numerators, and with 2 taken by the mesh it chose Q = 3:
# EQUIVALENT (H = 100000 is too large for the reference executor's re-check). Now the constant
# factors 3/10000 and 1/10000 make 3 a product of factors, which Q (real 50) may not reduce onto
# (src/reduce.c relations_kept()).
# expect: NOT EQUIVALENT at line 18
dim Q = 50, H = 100000
model m {
  input x : [H]
  y = x * 3e-4
  output y
}
plan p of m {
  mesh dp = 2
  x : [H]
  y = x * Q * 1e-4
  output y = y : [H]
}
