# limit_option_nodes.sp: --max-nodes 6 stops a plan that the default limits accept (issue 5: every
# limit is an option); a resource limit, so UNKNOWN with its name and where it stopped (it was
# exit 2 with an error until session 13, as if the plan were bad input)
# args: --max-nodes 6
# expect: UNKNOWN: limit max-nodes: the expression store is full (6 nodes) at limit_option_nodes.sp:9:7 (--max-nodes raises it)
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
