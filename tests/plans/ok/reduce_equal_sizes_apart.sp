# reduce_equal_sizes_apart.sp: `x * (H/2)` for the model's `x * K` is right at the declared sizes
# (H = 8, K = 4: both factors are 4), but the default shape reduction sends H/2 and K apart
# (H = 2, K = 3), where the two differ.  The counterexample at the checked sizes is one of the
# size-generic program, not of this plan: the reference executor finds no difference at the
# real sizes, so the real sizes are checked and the verdict is EQUIVALENT (plan-level fuzzer,
# find C; docs/soundness.md, "Shape reduction").
dim H = 8, K = 4

model m {
  input x : [K]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 2
  x : [K]
  y = x * (H/2)
  output y = y : [K]
}
