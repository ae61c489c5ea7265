# expect: reduce_dims_equal_concat_parts.sp:7:13: error: the sizes given with --dims are not an admissible reduction (K=10): a size of 70000 at the real sizes (line 18) reduces to 10, where the products of sizes 5 and 10 differ by a product of mesh sizes, literals and constants; at the real sizes 40 and 70000 differ by another
# Found by an adversarial review (2026-12-04, session 21): EQUIVALENT before with these --dims (K = 2S at them only; a concatenation's number of parts is now a factor).
# args: --dims S=5,K=10
# needs --dims S=5,K=10 (admissible): parts 2*S (nested concat) and K are equal at the reduced
# sizes, so no run-time flag; the plan counts 2S + K where the model counts 4S.  2 is no factor
# (mesh dp = 3, no literal 2), so K = 2*S is no kept relation.
dim S = 40, K = 70000
model m {
  input a : [S]
  input w : [K]
  c = concat(a, a, a, a, dim = 0)
  y = sum(c * 0 + 1) * a
  output y
}
plan p of m {
  mesh dp = 3
  a : [S]
  w : [K]
  d = concat(concat(a, a, dim = 0), w, dim = 0)
  output y = sum(d * 0 + 1) * a
}
