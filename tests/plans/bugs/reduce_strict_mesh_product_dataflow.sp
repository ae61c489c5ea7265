# A mean over the batch divided by a product of mesh sizes that the dataflow builds across
# statements: each rank divides its partial sum by dp, the all_reduce sums over dp and the result
# is divided by dp again, so the plan divides by dp * dp = 4; right only when the batch is 4 (it
# is 8). --strict-shapes keeps every reduced size apart from the products of mesh sizes,
# constants and sizes used as values (find J of the plan-level fuzzer; B reduced to 4 before).
# args: --strict-shapes
# expect: NOT EQUIVALENT at line 18
dim B = 8, H = 4
model m {
  input x : [B, H]
  y = mean(x, dim = 0)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B, H] partial(sum@dp)
  s = sum(x, dim = 0) / (dp)
  y = all_reduce(s, sum, dp) / dp
  output y = y : [H]
}
