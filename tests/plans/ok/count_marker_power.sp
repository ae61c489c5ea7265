# Each term of the sum over H is x_bj^2 / (w_b + 1): a square of a symbol of its own over a
# divisor the terms share. The structural count test (docs/soundness.md, "Counts") took only a
# symbol, a sum of products with one, or an exp atom as a marker; a power is one since
# 2026-12-07 (solver/solver.c held()), so the sum is shown not to count at the reduced sizes.
# Before, the normal forms' test (a denominator other than 1 counts) sent the check to the real
# sizes, where x exceeds --max-elements: UNKNOWN.
dim B = 4, H = 1000000
model m {
  input x : [B, H]
  input w : [B, 1]
  y = sum(x * x / (w + 1), dim = 1)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H@tp]
  w : [B, 1]
  y = all_reduce(sum(x * x / (w + 1), dim = 1), sum, tp)
  output y = y : [B]
}
