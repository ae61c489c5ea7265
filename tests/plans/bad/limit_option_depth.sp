# limit_option_depth.sp: --max-depth 2 stops a plan that the default limits accept (issue 5: every limit is an option)
# args: --max-depth 2
# expect: limit_option_depth.sp:6:14: error: nesting too deep (more than 2 levels)
dim N = 4
model m {
  input x : [N]
  y = exp(x) * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [N@dp]
  y = exp(x) * 2
  output y = y : [N@dp]
}
