# expect: NOT EQUIVALENT at line 102
# reduce_relation_of_sums_large.sp: bugs/reduce_relation_of_sums.sp of degree 6 with K = 10^8
# (session 40; docs/soundness.md, "Relations among sums over a reduced dim"). The model outputs
# 720 e6(x), the sixth elementary symmetric polynomial of x's K values, through the power sums
# (Newton's identities; each coefficient c*t written as additions of t, t+t, ...: no literal
# constrains the reduction); the plan outputs 0. e6 of K values is 0 for K < 6: the reduction
# checks K = 3, the reference executor cannot run 10^8 values and its second run, at K = 5,
# agrees. Before session 40 this was EQUIVALENT by default. Now the stage's monomials may hold 6
# elements of K, more than 3; the real sizes exceed the element limit, and until session 43
# this was UNKNOWN there. Now K is checked again at 6 (src/check.c regrow: the smallest size
# whose block holds 6 elements), where e6 is not 0: NOT EQUIVALENT, the reference executor's
# witness at K = 6.
dim K = 100000000, O = 1
model m {
  input x : [K, O]
  p1 = sum(x, dim = 0)
  p2 = sum(x * x, dim = 0)
  p3 = sum(x * x * x, dim = 0)
  p4 = sum(x * x * x * x, dim = 0)
  p5 = sum(x * x * x * x * x, dim = 0)
  p6 = sum(x * x * x * x * x * x, dim = 0)
  t0 = p1*p1*p1*p1*p1*p1
  c0 = t0
  t1 = p1*p1*p1*p1*p2
  t1d0 = t1 + t1
  t1d1 = t1d0 + t1d0
  t1d2 = t1d1 + t1d1
  c1 = t1 + t1d0 + t1d1 + t1d2
  t2 = p1*p1*p1*p3
  t2d0 = t2 + t2
  t2d1 = t2d0 + t2d0
  t2d2 = t2d1 + t2d1
  t2d3 = t2d2 + t2d2
  t2d4 = t2d3 + t2d3
  c2 = t2d2 + t2d4
  t3 = p1*p1*p2*p2
  t3d0 = t3 + t3
  t3d1 = t3d0 + t3d0
  t3d2 = t3d1 + t3d1
  t3d3 = t3d2 + t3d2
  t3d4 = t3d3 + t3d3
  c3 = t3 + t3d1 + t3d2 + t3d4
  t4 = p1*p1*p4
  t4d0 = t4 + t4
  t4d1 = t4d0 + t4d0
  t4d2 = t4d1 + t4d1
  t4d3 = t4d2 + t4d2
  t4d4 = t4d3 + t4d3
  t4d5 = t4d4 + t4d4
  c4 = t4d0 + t4d2 + t4d3 + t4d5
  t5 = p1*p2*p3
  t5d0 = t5 + t5
  t5d1 = t5d0 + t5d0
  t5d2 = t5d1 + t5d1
  t5d3 = t5d2 + t5d2
  t5d4 = t5d3 + t5d3
  t5d5 = t5d4 + t5d4
  c5 = t5d2 + t5d3 + t5d4 + t5d5
  t6 = p1*p5
  t6d0 = t6 + t6
  t6d1 = t6d0 + t6d0
  t6d2 = t6d1 + t6d1
  t6d3 = t6d2 + t6d2
  t6d4 = t6d3 + t6d3
  t6d5 = t6d4 + t6d4
  t6d6 = t6d5 + t6d5
  c6 = t6d3 + t6d6
  t7 = p2*p2*p2
  t7d0 = t7 + t7
  t7d1 = t7d0 + t7d0
  t7d2 = t7d1 + t7d1
  c7 = t7 + t7d0 + t7d1 + t7d2
  t8 = p2*p4
  t8d0 = t8 + t8
  t8d1 = t8d0 + t8d0
  t8d2 = t8d1 + t8d1
  t8d3 = t8d2 + t8d2
  t8d4 = t8d3 + t8d3
  t8d5 = t8d4 + t8d4
  c8 = t8d0 + t8d2 + t8d3 + t8d5
  t9 = p3*p3
  t9d0 = t9 + t9
  t9d1 = t9d0 + t9d0
  t9d2 = t9d1 + t9d1
  t9d3 = t9d2 + t9d2
  t9d4 = t9d3 + t9d3
  c9 = t9d2 + t9d4
  t10 = p6
  t10d0 = t10 + t10
  t10d1 = t10d0 + t10d0
  t10d2 = t10d1 + t10d1
  t10d3 = t10d2 + t10d2
  t10d4 = t10d3 + t10d3
  t10d5 = t10d4 + t10d4
  c10 = t10d2 + t10d3 + t10d4 + t10d5
  y = c0 + c2 + c3 + c6 + c8 + c9 - c1 - c4 - c5 - c7 - c10
  output y
}
plan p of m {
  mesh tp = 2
  x : [K, O]
  y = sum(x - x, dim = 0)
  output y = y : [O]
}
