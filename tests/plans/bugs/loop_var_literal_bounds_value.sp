# expect: NOT EQUIVALENT at line 18
# A loop variable with literal bounds used as a tensor value: z = s / l with l = 3, where the
# model's mean divides by H = 64.  The loop has no size bound to keep real, and its value was no
# constant of the products rule, so H was checked at 3: EQUIVALENT by default (helper-48's
# review, session 32; src/reduce.c var_constants).

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
  for l in 3..4 {
    z = s / l
  }
  output y = z : []
}
