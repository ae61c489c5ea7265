# expect: NOT EQUIVALENT at line 23
# args: --dims Q1=7 --dims Q2=3 --dims A=10 --dims MB=23 --dims V=11
# Offsets (session 27, helper-33): cross_entropy_grad's mask [R] is aligned with the logits'
# rows [R, V], not from the right: the mask's row offset Q1 landed on the gradient's V axis and
# slicing the gradient's rows at Q2 did not see it, so mask element Q1 + Q2 was the model's A at
# --dims Q1=7, Q2=3, A=10 and the plan EQUIVALENT; real elements 1000 and 1100 (src/ops_pos.c
# pos_ce_grad).
dim Q1 = 700, Q2 = 300, A = 1100, V = 128, MB = 2400
model m {
  input l : [Q1, V]
  input t : [Q1, V]
  input k : [MB]
  mk = slice(slice(k, 0, A, 2 * A), 0, 0, Q2)
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
