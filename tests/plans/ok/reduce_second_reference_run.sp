# The correct twin of bugs/reduce_size_value_vs_literal_sum.sp: the plan scales x by the size
# K as the model does.  The real sizes (N = 100000) are beyond the reference executor, so it
# runs a second time at admissible sizes with the small dim K at its real size 25 and N
# reduced, and agrees (the report's second `reference run:` line; tests/cli.sh checks it).
# Until 2026-12-06 both sides wrote K as the count sum(c * 0 + 1), which is now checked at the
# real sizes (docs/soundness.md, "Counts").
dim N = 100000, K = 25

model m {
  input x : [N]
  input c : [K]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 1
  x : [N]
  c : [K]
  y = x * K
  output y = y : [N]
}
