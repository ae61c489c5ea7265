# helper-71's find (docs/soundness.md, "Mesh cutoff"): x sharded over dp along T = B*R, an axis
# that is no single dim's, so no element became its member's own and the members' test of dp
# never ran (it ran only in stages with a recognised member's value): 24 e4 of the ranks' local
# sums was EQUIVALENT at dp = 4096 (and 16) checked as 3. A split whose members are not known
# now fails every stage with a difference, and the real mesh is checked.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 26
dim B = 1048576, R = 2, T = B * R
model m {
  input x : [T]
  y = sum(x + x)
  output y
}
plan p of m {
  mesh dp = 16
  x : [T@dp]
  s = sum(x)
  p1 = all_reduce(s, sum, dp)
  p2 = all_reduce(s * s, sum, dp)
  p3 = all_reduce(s * s * s, sum, dp)
  p4 = all_reduce(s * s * s * s, sum, dp)
  a = p1 * p1 * p2
  c = p2 * p2
  b = p1 * p3
  e = p1 * p1 * p1 * p1 - a - a - a - a - a - a + c + c + c + b + b + b + b + b + b + b + b - p4 - p4 - p4 - p4 - p4 - p4
  y = p1 + p1 + e
  output y = y : []
}
