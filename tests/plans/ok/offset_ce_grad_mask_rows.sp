# expect: EQUIVALENT
# The correct twin of bugs/offset_ce_grad_mask_rows.sp (session 27): the model reads
# the plan's position written as a sum, so both are checked at the real sizes and agree (no
# `# args`: the twin's --dims are not admissible here).
dim Q1 = 700, Q2 = 300, A = 1100, V = 128, MB = 2400
model m {
  input l : [Q1, V]
  input t : [Q1, V]
  input k : [MB]
  mk = slice(k, 0, Q1 + Q2, Q1 + 2 * Q2)
  y = cross_entropy_grad(slice(l, 0, Q2, 2 * Q2), slice(t, 0, Q2, 2 * Q2), mk, reduction = sum)
  output y
}
plan p of m {
  mesh dp = 1
  l : [Q1, V]
  t : [Q1, V]
  k : [MB]
  g = cross_entropy_grad(l, t, slice(k, 0, Q1, 2 * Q1), reduction = sum)
  output y = slice(g, 0, Q2, 2 * Q2) : [Q2, V]
}
