# expect: NOT EQUIVALENT at line 36
# args: --no-cross-check
# A relation among sums over a reduced dim (session 40; docs/soundness.md, "Relations among sums
# over a reduced dim"). The model outputs 24 * e4(x), the fourth elementary symmetric
# polynomial of x's K values, written through the power sums p_i = sum(x^i) (Newton's identity,
# 24 e4 = p1^4 - 6 p1^2 p2 + 3 p2^2 + 8 p1 p3 - 6 p4, its coefficients as additions so that no
# literal constrains the reduction). The plan outputs 0. At K = 1000 they differ, but e4 of
# three values is 0, and the shape reduction checks K = 3: the stage proof there is no proof
# at K = 1000, since its monomials hold four of K's elements and no monomial of K = 3 can.
# Before session 40 the checker alone (--no-cross-check, as here) said EQUIVALENT; now the
# stage's monomials are bounded (src/members.c), the bound 4 exceeds K = 3 and the real sizes
# are checked. (regress/reduce_relation_of_sums_large.sp: the same with K = 10^8.)
dim K = 1000, O = 1
model m {
  input x : [K, O]
  p1 = sum(x, dim = 0)
  p2 = sum(x * x, dim = 0)
  p3 = sum(x * x * x, dim = 0)
  p4 = sum(x * x * x * x, dim = 0)
  a = p1 * p1 * p2
  a2 = a + a
  a6 = a2 + a2 + a2
  b = p2 * p2
  c = p1 * p3
  c2 = c + c
  c4 = c2 + c2
  d = p4 + p4
  d6 = d + d + d
  y = p1 * p1 * p1 * p1 - a6 + b + b + b + c4 + c4 - d6
  output y
}
plan p of m {
  mesh tp = 2
  x : [K, O]
  # 24 * e4(x) is 0 when x has at most three values; x has 1000
  y = sum(x - x, dim = 0)
  output y = y : [O]
}
