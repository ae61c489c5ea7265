# expect: NOT EQUIVALENT at line 20
# args: --dims B=14 --no-infer-lineage --no-cross-check
# An operator's count over a shard of an uneven split (helper-58's review of the sizes-as-values
# change, find 1): B = 14000 (140000 until session 46, 10x the CI time) over dp = 3 is 4667, 4667, 4666 rows; checked at
# B = 14 (5, 5, 4 rows), each shard's mean divided by 5 * (14000/14) = 5000 (4000 on the last
# shard), which the weights K/B and L/B cancel exactly: EQUIVALENT at the checked sizes, wrong at
# the real ones (x = 1 at row 0: the model's 1/14000, the plan's 5000/(4667 * 14000)).  A
# layout's uneven split now makes a count over that axis not known (src/plan.c, src/exec_pos.c
# real_count: SP_CLAMP_COUNT), and the real sizes decide.
dim B = 14000, K = 5000, L = 4000
model m {
  input x : [B]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 3
  x : [B@dp]
  z = mean(x, dim = 0)
  y = z * (K / B)
  on dp = 2 {
    y = z * (L / B)
  }
  output y = y : [] partial(sum@dp)
}
