# expect: NOT EQUIVALENT at line 25
# A count the data forms against a sum of literals: the model scales x by the number of
# elements of c (sum(c * 0 + 1) is K = 25), the plan by 2 + 3 = 5.  The reduction may check
# K at 5 (a prime outside the factors 2 and 3, so the products rule admits it), where both
# are 5 * x; no rule on sizes can avoid every such coincidence.  N = 100000 keeps the real
# sizes beyond the reference executor, so before session 30 the check said EQUIVALENT; from
# session 30 the reference executor's second run, at admissible sizes with the small dims real
# (K = 25, N reduced), found the difference.  Since 2026-12-06 the checker alone does: the
# terms of sum(c * 0 + 1) share the monomial 1, a count, so the stage is no proof at the
# reduced sizes and the real sizes are checked (docs/soundness.md, "Counts";
# `--dims K=5 --no-cross-check` gives NOT EQUIVALENT too).
dim N = 100000, K = 25

model m {
  input x : [N]
  input c : [K]
  y = x * sum(c * 0 + 1)
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  y = x * 2 + x * 3
  output y = y : [N]
}
