# helper-68's second find: `x ^ dp` took the checked mesh size as its power, so x^3 at dp = 16
# checked as 3 matched the model's x * x * x. The axis's size in an exponent now gives the cut
# up (src/reduce.c uniform_expr) and the real mesh finds x^16.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 15
dim H = 64
model m {
  input x : [H]
  y = x * x * x
  output y
}
plan p of m {
  mesh dp = 16
  x : [H@dp]
  y = x ^ dp
  output y = y : [H@dp]
}
