# expect: NOT EQUIVALENT at line 24
# args: --no-cross-check
# A count behind fractions: each term of the sum over K is a/(a+b) + b/(a+b) = 1, so the model
# scales x by K = 25 and the plan's 2 + 3 is right at K = 5 only. The count test first took
# a and b for markers (each is a factor of its fraction, and the clean divisor a + b was left
# out of the ownership), but the two fractions of one term add over that divisor and cancel
# with it: the checker alone said EQUIVALENT (helper-57's review, 2026-12-06). A divisor is left
# out only when its term is one leaf (solver/solver.c unit(); docs/soundness.md, "Counts").
dim N = 100000, K = 25

model m {
  input x : [N]
  input a : [K]
  input b : [K]
  y = x * sum(a / (a + b) + b / (a + b))
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  a : [K]
  b : [K]
  y = x * 2 + x * 3
  output y = y : [N]
}
