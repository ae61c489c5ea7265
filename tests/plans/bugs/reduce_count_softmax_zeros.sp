# expect: NOT EQUIVALENT at line 24
# args: --dims K=5 --no-cross-check
# A count hidden in a softmax of zeros: softmax(c * 0) is 1/K in every element (its denominator
# sums K ones), so the model scales x by 1 / sum(softmax(c * 0)^2) = K = 25, the plan by
# 2 + 3. Checked with K reduced to 5 both are 5 * x, and without the cross-check nothing else
# looks at the real sizes: before 2026-12-06 this said EQUIVALENT. Now the softmax's
# denominator and the sum of p * p are sums over an axis whose terms share a monomial
# (docs/soundness.md, "Counts"), the stage is not taken as a proof at the reduced sizes, and
# the real sizes show the difference.
dim N = 100000, K = 25

model m {
  input x : [N]
  input c : [K]
  p = softmax(c * 0)
  y = x / sum(p * p)
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  y = x * 2 + x * 3
  output y = y : [N]
}
