# definedness_entropy_zero_log_zero.sp: the entropy of given probabilities with the convention
# 0 log 0 = 0.  The model guards the log with where; the plan computes p * log(p) directly, which
# is 0 * log(0) = NaN at a zero probability (the model is 0 there).  The plan writes no lineage:
# the relation `t ~ t` is inferred (by name, the reference executor having found the plan wrong),
# and its stage fails at line 20, where the plan computes 0 * log(0) (before inference: the line after, the all-reduce).
# expect: NOT EQUIVALENT at line 20

dim B = 4, V = 8

model m {
  input p : [B, V]
  t   = where(p > 0, p * log(p), 0)
  ent = -sum(t, dim = 1)
  output ent
}

plan p_tp2 of m {
  mesh tp = 2
  p : [B, V@tp]
  t = p * log(p)
  ent = -all_reduce(sum(t, dim = 1), sum, tp)
  output ent = ent : [B]
}
