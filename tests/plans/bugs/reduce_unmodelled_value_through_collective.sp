# expect: NOT EQUIVALENT at line 15
# Found by the plan-level fuzzer (seed 2100, 2026-12-04) on the first fix: a size reaching a piecewise
# function through a collective, minimum(all_reduce(B, avg, dp), 10), was not kept at its real size.
dim B = 64, H = 8192

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  y = x * (2 * minimum(all_reduce(B, avg, dp), 10) / B)
  output y = y : [B@dp, H]
}
