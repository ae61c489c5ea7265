# limit_option_tokens.sp: --max-tokens 20 stops a plan that the default limits accept (issue 5: every limit is an option)
# args: --max-tokens 20
# expect: limit_option_tokens.sp:7:12: error: too many tokens (more than 20)
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
