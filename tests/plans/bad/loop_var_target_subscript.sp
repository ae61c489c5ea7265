# expect: loop_var_target_subscript.sp:10:5: error: the sizes given with --dims are not an admissible reduction (L=3): the bound at line 20 of a loop keeps its real size (a trip count is a value)
# A loop variable in a non-affine subscript of an assignment's target is a use of it (rev51):
# `t[l % 3] = x * w[l]` writes t[0], t[1], t[2] once each at L = 3 and again and again at the
# real L = 100 (t[0] ends as x * w[99]); var_uses() read values, conditions and bounds, not
# targets, so --dims L=3 was admissible and the plan EQUIVALENT with --no-cross-check (the
# default L = 5 happened to differ). src/reduce.c collect_block.  Since 2026-12-06 every loop's
# bound that is a size keeps its real size (a trip count is a value: src/reduce.c push_loop), so
# the first loop's, line 20, is the one named.
# args: --dims L=3 --no-cross-check
dim L = 100, B = 4, H = 8
model m {
  input x : [B, H]
  param w[L] : [H]
  y = x * w[0] + x * w[1] + x * w[2]
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  for l in 0..L {
    w[l] : [H]
  }
  for l in 0..L {
    t[l % 3] = x * w[l]
  }
  output y = t[0] + t[1] + t[2] : [B@dp, H]
}
