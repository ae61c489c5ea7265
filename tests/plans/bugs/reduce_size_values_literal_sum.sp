# expect: NOT EQUIVALENT at line 19
# args: --dims K=3
# reduce_size_values_literal_sum.sp: a size used as a value against a sum of literals.  The
# model scales by K = 4, the plan by 2 + 1 = 3 in two terms.  No single literal of the plan is 3,
# so the rules that keep reduced sizes off the program's constants admit K = 3 (--dims), where the
# two agree; before sizes written as values took their real sizes (docs/soundness.md "Sizes as
# values") this was EQUIVALENT, and N keeps the reference executor from the real sizes.
dim K = 4, N = 20000

model m {
  input x : [K, N]
  y = x * K
  output y
}

plan p of m {
  mesh dp = 2
  x : [K, N@dp]
  y = x * 2 + x * 1
  output y = y : [K, N@dp]
}
