# The correct twin of bugs/reduce_count_vs_literal_sum.sp: the plan scales x by the count of
# c as the model does, formed the same way.  The real sizes (N = 100000) are beyond the
# reference executor, so it runs a second time at admissible sizes with the small dim K at
# its real size 25 and N reduced, and agrees (the report's second `reference run:` line;
# tests/cli.sh checks it).
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
  y = x * sum(c * 0 + 1)
  output y = y : [N]
}
