# expect: NOT EQUIVALENT at line 22
# The first K elements of an all_gather of blocks of 4A: rank 0's block only at the reduced
# K = 7 <= 4A = 24, two ranks' at the real K = 96 > 4A = 80 (plan 112 * x, model 96 * x).  Each
# rank's part is reshape(.., [-1]) of [A, 4], whose extent has no known monomial, so the
# gathered axis's offsets are not known (SP_POS_MIX) and, before session 30,
# src/exec_pos.c slice_bounds_real skipped both of its rules and said EQUIVALENT (helper-42's
# review, find 3).  Now offsets not known, or an extent not known, under a size bound send the
# check to the real sizes.  With expand(rank.tp + 1, [4 * A]) the extent is known:
# ok/slice_end_past_gather_block.sp.
dim A = 20, K = 96, N = 6
model m {
  input x : [N]
  y = x * K
  output y
}
plan p of m {
  mesh tp = 2
  x : [N]
  u = reshape(expand(rank.tp + 1, [A, 4]), [-1])
  g = all_gather(u, tp, dim = 0)
  c = sum(slice(g, 0, 0, K))
  output y = x * c : [N]
}
