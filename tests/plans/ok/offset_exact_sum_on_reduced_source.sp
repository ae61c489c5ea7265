# expect: EQUIVALENT
# The correct twin of bugs/offset_exact_sum_on_reduced_source.sp (session 27): the model reads
# the plan's position written as a sum, so both are checked at the real sizes and agree (no
# `# args`: the twin's --dims are not admissible here).
dim D = 1024, H = 128, NH = 32, NKV = 8, A = 100
model m {
  input x : [D, H]
  y = slice(x, 0, NH + NKV, NH + NKV + 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [D, H]
  h = slice(x, 0, NH, 2 * NH)
  output y = slice(h, 0, NKV, NKV + 1) * 2 : [1, H]
}
