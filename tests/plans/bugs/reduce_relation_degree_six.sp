# A relation of degree 6 among the reduced sizes: the plan multiplies by D six times and divides
# by 64, which is 1 only where D = 2. With the mesh size 3 and the literal 64 as the only factors,
# no product of at most three copies of D is a product of factors at D = 2, so the table of
# products of at most three sizes (relations of degree 5 and less) let D = 2 stand for the real
# 100000: EQUIVALENT before 2026-12-03 (H = 100000 is too large for the reference executor's
# re-check). Now every relation among the reduced sizes and the factors, of any degree, must
# hold at the real sizes (src/reduce.c all_degrees_kept(): the kernel of the prime-exponent
# matrix), and D = 2 is refused: D^6 / 64 = 1 there but not at 100000.
# expect: NOT EQUIVALENT at line 19
dim D = 100000
model m {
  input x : [D]
  y = x
  output y
}
plan p of m {
  mesh dp = 3
  x : [D]
  y = x * D * D * D * D * D * D / 64
  output y = y : [D]
}
