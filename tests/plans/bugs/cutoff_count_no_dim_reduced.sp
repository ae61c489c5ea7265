# helper-68's first find (docs/soundness.md, "Mesh cutoff"): with every dim at its real size the
# count and members tests did not run, so the all-reduce of a replicated x (dp * x at the real
# dp = 4096) against the model's 3 * x was EQUIVALENT with dp checked as 3. The tests now run
# wherever an axis is cut: the sum counts, the real mesh is checked, and the difference is found.
# args: --mesh-cutoff
# expect: NOT EQUIVALENT at line 16
dim H = 2
model m {
  input x : [H]
  y = x + x + x
  output y
}
plan p of m {
  mesh dp = 4096
  x : [H]
  y = all_reduce(x, sum, dp)
  output y = y : [H]
}
