# expect: NOT EQUIVALENT at line 23
# args: --dims H=22,K=13
# x * (H/2) + x * 2 for the model's x * K: 402x against 401x at the real H = 800, K = 401,
# equal at the checked H = 22, K = 13 (11 + 2 = 13).  The checker takes sizes used as values at
# their real sizes and finds the difference; the real sizes are beyond the reference executor
# (131,072 elements), so the witness must come from the checked sizes.  Before session 38 the
# reference executor ran them with their own values (equal there) and the check went to the
# real sizes: UNKNOWN at max-elements.  Now it runs the checker's program (shapes at the
# checked sizes, sizes used as values at the real ones: --real-values) and prints the witness.
dim N = 1024, D = 128, H = 800, K = 401
model m {
  input x : [N, D]
  input e : [H, K]
  y = x * K
  f = e * 3
  output y
  output f
}
plan p of m {
  mesh dp = 2
  x : [N@dp, D]
  e : [H, K]
  output y = x * (H / 2) + x * 2 : [N@dp, D]
  output f = e * 3 : [H, K]
}
