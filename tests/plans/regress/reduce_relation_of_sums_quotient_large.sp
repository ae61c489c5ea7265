# expect: NOT EQUIVALENT at line 98
# reduce_relation_of_sums_quotient_large.sp: 720 e6(x) / p1^6 written as sum_j U_j p1^-(6-j)
# (Newton's identities; helper-67's review of session 40), the plan 0, K = 10^8. e6 of K values
# is 0 for K < 6: checked at K = 3 it was EQUIVALENT by default (the reference executor skips
# the real sizes; its second run at K = 5 agrees), because the bound counted each term over a
# lower power of p1 as multiplied by p1 once. Now the stage's monomials may hold 7 elements of
# K; the real sizes exceed the element limit (UNKNOWN until session 43). Now K is checked
# again at a size whose block holds them (src/check.c regrow): NOT EQUIVALENT.
dim K = 100000000, O = 1
model m {
  input x : [K, O]
  p1 = sum(x, dim = 0)
  p2 = sum(x * x, dim = 0)
  p3 = sum(x * x * x, dim = 0)
  p4 = sum(x * x * x * x, dim = 0)
  p5 = sum(x * x * x * x * x, dim = 0)
  p6 = sum(x * x * x * x * x * x, dim = 0)
  u0 = p6
  u0d0 = u0 + u0
  u0d1 = u0d0 + u0d0
  u0d2 = u0d1 + u0d1
  u0d3 = u0d2 + u0d2
  u0d4 = u0d3 + u0d3
  u0d5 = u0d4 + u0d4
  u0c = u0d2 + u0d3 + u0d4 + u0d5
  u1 = p5
  u1d0 = u1 + u1
  u1d1 = u1d0 + u1d0
  u1d2 = u1d1 + u1d1
  u1d3 = u1d2 + u1d2
  u1d4 = u1d3 + u1d3
  u1d5 = u1d4 + u1d4
  u1d6 = u1d5 + u1d5
  u1c = u1d3 + u1d6
  u2 = p4 * p2
  u2d0 = u2 + u2
  u2d1 = u2d0 + u2d0
  u2d2 = u2d1 + u2d1
  u2d3 = u2d2 + u2d2
  u2d4 = u2d3 + u2d3
  u2d5 = u2d4 + u2d4
  u2c = u2d0 + u2d2 + u2d3 + u2d5
  u3 = p4
  u3d0 = u3 + u3
  u3d1 = u3d0 + u3d0
  u3d2 = u3d1 + u3d1
  u3d3 = u3d2 + u3d2
  u3d4 = u3d3 + u3d3
  u3d5 = u3d4 + u3d4
  u3c = u3d0 + u3d2 + u3d3 + u3d5
  u4 = p3 * p3
  u4d0 = u4 + u4
  u4d1 = u4d0 + u4d0
  u4d2 = u4d1 + u4d1
  u4d3 = u4d2 + u4d2
  u4d4 = u4d3 + u4d3
  u4c = u4d2 + u4d4
  u5 = p3 * p2
  u5d0 = u5 + u5
  u5d1 = u5d0 + u5d0
  u5d2 = u5d1 + u5d1
  u5d3 = u5d2 + u5d2
  u5d4 = u5d3 + u5d3
  u5d5 = u5d4 + u5d4
  u5c = u5d2 + u5d3 + u5d4 + u5d5
  u6 = p3
  u6d0 = u6 + u6
  u6d1 = u6d0 + u6d0
  u6d2 = u6d1 + u6d1
  u6d3 = u6d2 + u6d2
  u6d4 = u6d3 + u6d3
  u6c = u6d2 + u6d4
  u7 = p2 * p2 * p2
  u7d0 = u7 + u7
  u7d1 = u7d0 + u7d0
  u7d2 = u7d1 + u7d1
  u7c = u7 + u7d0 + u7d1 + u7d2
  u8 = p2 * p2
  u8d0 = u8 + u8
  u8d1 = u8d0 + u8d0
  u8d2 = u8d1 + u8d1
  u8d3 = u8d2 + u8d2
  u8d4 = u8d3 + u8d3
  u8c = u8 + u8d1 + u8d2 + u8d4
  u9 = p2
  u9d0 = u9 + u9
  u9d1 = u9d0 + u9d0
  u9d2 = u9d1 + u9d1
  u9c = u9 + u9d0 + u9d1 + u9d2
  u10 = p1 / p1
  u10c = u10
  y = u1c * p1 ^ -5 + u2c * p1 ^ -6 + u4c * p1 ^ -6 + u6c * p1 ^ -3 + u8c * p1 ^ -4 + u10c - u0c * p1 ^ -6 - u3c * p1 ^ -4 - u5c * p1 ^ -5 - u7c * p1 ^ -6 - u9c * p1 ^ -2
  output y
}
plan p of m {
  mesh tp = 2
  x : [K, O]
  y = sum(x - x, dim = 0)
  output y = y : [O]
}
