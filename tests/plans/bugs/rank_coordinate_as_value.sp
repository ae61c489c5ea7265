# expect: NOT EQUIVALENT at line 20
# A rank coordinate used as a tensor value: rank 3 divides the sum by rank.dp = 3 where the
# model's mean divides by H = 64.  The products rule read the literals of tensor arithmetic,
# not the values of rank coordinates, so H was checked at 3, where sum / 3 is the mean:
# EQUIVALENT by default (helper-48's review, session 32).  Every value of arithmetic of rank
# coordinates and variables used as a tensor value is now a constant the reduced sizes avoid,
# and a factor where it multiplies or divides (src/reduce.c var_constants).

dim H = 64
model m {
  input x : [H]
  y = mean(x)
  output y
}
plan p of m {
  mesh dp = 256, tp = 2
  x : [H]
  s = sum(x)
  on dp = 3 {
    output y = s / rank.dp : []
  }
}
