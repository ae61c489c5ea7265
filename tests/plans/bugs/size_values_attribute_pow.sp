# expect: NOT EQUIVALENT at line 20
# args: --dims K=7
# pow(x, K) is x^25 at the real K against the model's x^4 * x^3; with K checked at 7 the exponent
# was the checked 7 and the check EQUIVALENT (helper-59's review, find 1).  The exponent is a
# value attribute now (src/ops.c sp_ops_attr_is_value), taken at the real K.
dim N = 7, K = 25
model m {
  input x : [N]
  input c : [K]
  input q : [65537]
  y = x^4 * x^3
  z = q * 2
  output y, z
}
plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  q : [65537]
  y = pow(x, K)
  z = q * 2
  output y = y : [N]
  output z = z : [65537]
}
