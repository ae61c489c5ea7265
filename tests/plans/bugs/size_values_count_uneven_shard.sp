# expect: NOT EQUIVALENT at line 20
# args: --dims B=14 --no-infer-lineage --no-cross-check
# An operator's count over a shard of an uneven split (helper-58's review of the sizes-as-values
# change, find 1): B = 140000 over dp = 3 is 46667, 46667, 46666 rows (torch.chunk); checked at
# B = 14 (5, 5, 4 rows), each shard's mean divided by 5 * (140000/14) = 50000 (40000 on the last
# shard), which the weights K/B and L/B cancel exactly: EQUIVALENT at the checked sizes, wrong at
# the real ones (x = 1 at row 0: the model's 1/140000, the plan's 50000/(46667 * 140000)).  A
# layout's uneven split now makes a count over that axis not known (src/plan.c, src/exec_pos.c
# real_count: SP_CLAMP_COUNT), and the real sizes decide.
dim B = 140000, K = 50000, L = 40000
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
