# expect: NOT EQUIVALENT at line 16
# Literal positions in a shard (review of 2026-12-04, helper-24): EQUIVALENT before at B = 6.
# The model reads sample 5 of a batch of 64; the plan shards the batch over dp = 2 (rank 1 holds
# samples 32..63) and has rank 1 read its local row 2, sample 34. At B = 6 (B/dp = 3) rank 1's
# row 2 is sample 5. A shard size keeps its order relative to every literal position (B/dp > 6).
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 5, 6) * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  on dp = 1 {
    output y = slice(x, 0, 2, 3) * 2 : [1, H]
  }
}
