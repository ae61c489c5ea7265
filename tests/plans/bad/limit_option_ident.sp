# limit_option_ident.sp: --max-ident 4 stops a plan that the default limits accept (issue 5: every limit is an option)
# args: --max-ident 4
# expect: limit_option_ident.sp:5:1: error: identifier too long (more than 4 characters)
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
