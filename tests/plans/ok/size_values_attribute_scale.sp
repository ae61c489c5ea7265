# scale(x, c = K) for the model's x * 25 with K = 25: correct.  With K checked at 7 and the
# attribute taken at the checked size the check was NOT EQUIVALENT, the checker's own
# counterexample printed as a witness (helper-59's review, find 2).  The attribute takes the
# real K now (src/exec.c make_attr).
dim N = 7, K = 25
model m {
  input x : [N]
  input c : [K]
  input q : [100000]
  y = x * 25
  z = q * 2
  output y, z
}
plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  q : [100000]
  y = scale(x, c = K)
  z = q * 2
  output y = y : [N]
  output z = z : [100000]
}
