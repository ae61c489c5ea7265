# expect: NOT EQUIVALENT at line 19
# args: --mesh-cutoff
# Under the mesh cutoff (dp = 8 checked as 5, K = 25 as 7) `x * 3 + x * 4` passes for the
# model's `x * K`; the reference executor differs at the real sizes.  Session 30's first
# version sent such a plan to the real sizes only without the cutoff and reported exit 4
# (internal error) with it (helper-43's review, find 2); now the real mesh and sizes are
# checked (src/crosscheck.c, src/check.c run_exact).
dim N = 48, K = 25
model m {
  input x : [N]
  input c : [K]
  y = x * sum(c * 0 + 1)
  output y
}
plan p of m {
  mesh dp = 8
  x : [N@dp]
  c : [K]
  y = x * 3 + x * 4
  output y = y : [N@dp]
}
