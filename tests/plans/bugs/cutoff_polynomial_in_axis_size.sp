# A value that is a polynomial in a mesh size can vanish at a smaller size and not at the real
# one. all_reduce(x, sum, dp) of a replicated x is dp * x; the plan subtracts 2*x and 3*x, so y
# is (dp - 5) * x: 3 * x on the real dp = 8, where the model's y is 0. The plan is uniform along
# dp and no literal has the prime factor 5, so the mesh cutoff of before 2026-12-02 (on by
# default then) checked dp = 8 as dp = 5, found y = 0 and said EQUIVALENT (the real sizes are
# too large for the reference executor's re-check). The sum 2 + 3 = 5 is written nowhere: no
# rule on the program's integers can see it. The cutoff is now opt-in (--mesh-cutoff) and a
# check under it that finds no difference is UNKNOWN (tests/cli.sh), never EQUIVALENT; by
# default every rank is checked. Since session 42 an axis of 8 or more ranks is cut only at a
# size of at most half its own (a cost rule), so the mesh is dp = 16 (y = 11 * x there), still
# checked as dp = 5, where the count test sends the check to the real mesh (tests/cli.sh).
# expect: NOT EQUIVALENT at line 23
dim B = 4096, H = 4096
model m {
  input x : [B, H]
  y = x - x
  output y
}
plan p of m {
  mesh dp = 16
  x : [B, H]
  t = all_reduce(x, sum, dp)
  y = t - 2*x - 3*x
  output y = y : [B, H]
}
