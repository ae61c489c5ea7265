# --dims may not give sizes with a multiplicative relation of any degree that the real sizes
# lack: D = 2 makes D^6 / 64 = 1 with the literal 64 (and the mesh size 3) as the factors, where
# the real D = 100000 does not (tests/plans/bugs/reduce_relation_degree_six.sp is the same plan
# without --dims). Before 2026-12-03 only relations of degree 5 and less were compared.
# args: --dims D=2
# expect: reduce_relation_degree_six_dims.sp:7:5: error: the sizes given with --dims are not an admissible reduction (D=2): a size of 100000 at the real sizes (line 15) reduces to 2, where a product of sizes (real->reduced^exponent: 100000->2^6) is a product of mesh sizes, literals and constants at the reduced sizes but not at the real ones
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
