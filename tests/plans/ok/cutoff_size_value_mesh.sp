# args: --mesh-cutoff
# x * dp for the model's x * K with K = dp = 8: correct.  Under the mesh cutoff dp is checked at
# 3 and K, a dim, reduced apart from it: the checker (K at its real 8, dp at the cut 3) and the
# reference executor at the checked sizes (K = 2) both differed, and the difference was taken as
# a witness: NOT EQUIVALENT (helper-60's review).  A difference under the cutoff where a size
# used as a value took its real size is no witness; the real mesh is checked (src/crosscheck.c
# no_witness, SP_NOWIT_CUTOFF_VALUE).
dim N = 100000, K = 8
model m {
  input x : [N]
  y = x * K
  output y
}
plan p of m {
  mesh dp = 8
  x : [N]
  y = x * dp
  output y = y : [N]
}
