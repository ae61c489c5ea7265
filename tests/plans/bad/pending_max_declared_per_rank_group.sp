# expect: pending_max_declared_per_rank_group.sp:18:5: error: 'x' would hold a pending max (partial(max@...)) on some ranks and another value on the others, which keep their value here: give it one nature on every rank (reduce the pending value first, or use another name)
# A declaration that makes x a pending max over tp on the dp = 0 ranks (their tp group is whole)
# and a plain value on the dp = 1 ranks: the binding's pending flag is one per binding, and the
# second declaration cleared it for every rank, so `x * 2` used dp = 0's part as if it were x
# (EQUIVALENT before 2026-12-04, from an adversarial review).
dim N = 70000
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  on dp = 0 {
    x : [N] partial(max@tp)
  }
  on dp = 1 {
    x : [N]
  }
  output y = x * 2 : [N]
}
