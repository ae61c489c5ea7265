# args: --dims N=7,K=5,H=6
# x * (H/2) + sum(expand(s, [K])) for the model's x * K + s * K: correct at the real sizes
# (H/2 = K = 40).  At the checked sizes the checker's count sum(expand(s, [K])) is 5 s against
# the real 40 s, and the reference executor, unable to run the real sizes, differed there for
# another reason (H/2 = 3, K = 5): a wrong NOT EQUIVALENT (helper-59's review, find 3).  A
# failed stage whose values count elements is lifted at the real sizes only (src/crosscheck.c
# failed_counts), where it is EQUIVALENT.
dim N = 100000, K = 40, H = 80
model m {
  input x : [N]
  input s : []
  y = x * K + s * K
  output y
}
plan p of m {
  mesh dp = 1
  x : [N]
  s : []
  y = x * (H / 2) + sum(expand(s, [K]))
  output y = y : [N]
}
