# expect: NOT EQUIVALENT at line 23
# A size in a value attribute (helper-59's review of the sizes-as-values change, find 1):
# scale(x, c = K) is 25 * x at the real K against the model's 4 * x + 3 * x; make_attr took K at
# the checked size (7, the model's sum), and the check was EQUIVALENT by default (q : [65537],
# a literal shape, keeps every reference run off).  A value attribute (src/ops.c
# sp_ops_attr_is_value: scale's c, pow's exponent, an eps, a bound, a probability, attention's
# scale, an optimizer's arguments) now takes its sizes at their real values (src/exec.c
# make_attr), like a size in a tensor expression.
dim N = 7, K = 25
model m {
  input x : [N]
  input c : [K]
  input q : [65537]
  y = x * 4 + x * 3
  z = q * 2
  output y, z
}
plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  q : [65537]
  y = scale(x, c = K)
  z = q * 2
  output y = y : [N]
  output z = z : [65537]
}
