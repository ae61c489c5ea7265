# expect: concat_exact_extent_dims.sp:9:18: error: the sizes given with --dims are not an admissible reduction (K=5): a size of 100 at the real sizes (line 23) reduces to 5, where the products of sizes 5 and 5 differ by a product of mesh sizes, literals and constants; at the real sizes 100 and 5 differ by another
# args: --dims K=5 --no-cross-check
# concat_exact_extent_dims.sp: concat(b, a) of 2 and 3 rows makes an extent of 5 at every size, a
# size of the program (src/exec_pos.c sp_note_exact_extent), and K reduced to 5 meets it: the
# plan adds w [K, M] to a [5, M] tensor, which fits at K = 5 only (at the real K = 100 the plan
# does not run).  Before session 33 src/reduce_sums.c read the concatenation's literal sum and
# kept it apart from nothing: EQUIVALENT with --dims K=5, even with the cross-check (whose
# second run met the shape error and was skipped).
dim M = 1000000, K = 100

model m {
  input a : [3, M]
  input b : [2, M]
  input w : [K, M]
  y = w * 2
  output y
}

plan p of m {
  mesh dp = 2
  a : [3, M@dp]
  b : [2, M@dp]
  w : [K, M@dp]
  z = concat(b, a, dim = 0)
  y = w * 2 + (z - z)
  output y : [K, M@dp]
}
