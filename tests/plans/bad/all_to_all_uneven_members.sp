# expect: all_to_all_uneven_members.sp:14:7: error: all_to_all: the members' chunks have shapes [2, 2] and [2, 3], which differ off the concat dim 0
# all_to_all over members whose tensors differ off the split and concat dims (an uneven layout
# K@tp{2,3}): the output was sized from the first member's chunk and the others were written
# past its end (a heap buffer overflow, found by an adversarial review on 2026-12-04).
dim N = 4, K = 5
model m {
  input x : [N, K]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 2
  x : [N, K@tp{2,3}]
  z = all_to_all(x, 0, 0, tp)
  output y = all_to_all(z, 0, 0, tp) * 2 : [N, K@tp{2,3}]
}
