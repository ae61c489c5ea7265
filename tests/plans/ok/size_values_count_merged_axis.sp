# A mean over an axis a reshape merged (its extent's monomial not known) against the model's
# means over the axes it merged (helper-58's review of the sizes-as-values change, find 2): the
# same function at every size.  The model's means divide by the real counts, the plan's by the
# count it saw (4 at B = C = 2), so the checked program differed, and its own counterexample was
# printed as a witness: a wrong NOT EQUIVALENT.  A count not known at the real sizes now sends
# the check there (src/ops_base.c count_real, SP_CLAMP_COUNT), where it is EQUIVALENT (80000
# elements: beyond the reference executor, within the checker).
dim M = 2, B = 200, C = 200
model m {
  input x : [M, B, C]
  y = mean(mean(x, dim = 2), dim = 1)
  output y
}
plan p of m {
  mesh dp = 1
  x : [M, B, C]
  y = mean(reshape(x, [M, -1]), dim = 1) * (M^1 / M)
  output y = y : [M]
}
