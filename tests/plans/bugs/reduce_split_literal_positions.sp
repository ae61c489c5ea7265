# helper-68's fourth find: pieces of a literal size at literal indices are slices with literal
# bounds. With B reduced to 3, split(x, 1, 0, i) for i = 0, 1, 2 were all of B and their sum
# matched the model's sum over B (EQUIVALENT with --no-cross-check at B = 4096). Their ends are
# now literal positions that B stays above (src/reduce.c collect_expr).
# expect: NOT EQUIVALENT at line 18
dim B = 4096
model m {
  input x : [B]
  y = sum(x)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B]
  a = split(x, 1, 0, 0)
  b = split(x, 1, 0, 1)
  c = split(x, 1, 0, 2)
  y = sum(a + b + c)
  output y = y : []
}
