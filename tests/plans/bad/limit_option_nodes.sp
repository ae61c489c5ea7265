# limit_option_nodes.sp: --max-nodes 6 stops a plan that the default limits accept (issue 5: every limit is an option)
# args: --max-nodes 6
# expect: limit_option_nodes.sp:7:7: error: exp: out of memory or expression node limit (--max-nodes)
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
