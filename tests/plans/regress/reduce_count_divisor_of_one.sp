# expect: UNKNOWN
# args: --no-cross-check
# A count behind a divisor (helper-57's review, 2026-12-06): (a + b + c)/(a + b) is
# 1 + c/(a + b), so the model's sum over K is 25 + sum(c/(a + b)); the plan's 1 + 1 + ... is
# right at K = 2 only. The terms' forms have numerators that share no monomial, and the forms
# test compared numerators only: the checker said EQUIVALENT. A form with a divisor other than
# 1 counts now (solver/solver.c terms_share), so the real sizes are checked; there the
# difference is on the plan's cut s, which --no-cross-check does not lift: UNKNOWN, never
# EQUIVALENT. (N + 1) keeps N at its real size, past the reference executor.
dim N = 100000, K = 25

model m {
  input x : [N]
  input a : [K]
  input b : [K]
  input c : [K]
  s = sum((a + b + c) / (a + b))
  y = x * s * (N + 1) / (N + 1)
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  a : [K]
  b : [K]
  c : [K]
  s = 1 + 1 + sum(c / (a + b))   ~ s : []
  y = x * s * (N + 1) / (N + 1)
  output y = y : [N]
}
