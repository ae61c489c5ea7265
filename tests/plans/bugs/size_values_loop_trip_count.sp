# expect: NOT EQUIVALENT at line 21
# A loop's trip count used as a value (helper-58's review, find 4): `for i in 0..K { y += x }`
# adds x K times, 25 * x at the real K against the model's 2 * x + 3 * x; with K checked at 5 it
# was EQUIVALENT (also before the sizes-as-values change).  A loop's bound that is a size now
# keeps its real size (src/reduce.c push_loop).  Checked without the cross-check: the checker
# alone must not prove it.
# args: --no-cross-check
dim N = 7, K = 25
model m {
  input x : [N]
  input c : [K]
  y = x * 2 + x * 3
  output y
}
plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  y = x * 0
  for i in 0..K {
    y += x
  }
  output y = y : [N]
}
