# A reshape's -1 over a tp shard (review of 2026-12-04, helper-26): H/tp/16 is whole at the real
# H = 64; the reduced H = 48 left H/tp = 24 and the run stopped. The failing reshape now grows
# H (src/ops_shape.c inferred_divisor, src/check.c run_divisible).
dim B = 2, S = 2, H = 64
model m {
  input x : [B, S, H]
  param w : [H, H]
  y = matmul(x, w)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, S, H]
  w : [H, H@tp]
  h = matmul(x, w)
  r = reshape(h, [B, S, -1, 16])
  h2 = reshape(r, [B, S, H/tp])
  output y = all_gather(h2, 2, tp) : [B, S, H]
}
