# expect: NOT EQUIVALENT at line 23
# args: --no-cross-check
# A count hidden in a softmax (helper-57's review, 2026-12-06): every row of softmax(s) sums
# to 1, so the model's total is K = 25 (the number of rows) and the plan's 3 + 4 is right at
# K = 7 only. The full sum is one flat sum of K * J probabilities exp(s_kj) / Z_k whose
# numerators share no monomial, and the count test took exp(s_kj) for markers because the
# divisor Z_k was left out as "clean"; but the terms of a row add up to their divisor. Every
# divisor is a unit now (solver/solver.c unit(); docs/soundness.md, "Counts"). (N + 1) keeps
# N at its real size, past the reference executor.
dim N = 100000, K = 25, J = 4

model m {
  input x : [N]
  input s : [K, J]
  y = x * sum(softmax(s, dim = 1)) * (N + 1) / (N + 1)
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  s : [K, J]
  y = (x * 3 + x * 4) * (N + 1) / (N + 1)
  output y = y : [N]
}
