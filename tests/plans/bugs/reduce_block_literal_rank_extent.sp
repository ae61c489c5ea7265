# expect: NOT EQUIVALENT at line 15
# A reshape's extent written as rank arithmetic, shape = [(2 + rank.dp), -1, H] (2 on a mesh of
# dp = 1; the plan-level fuzzer's find, seed 2500): its values were no divisors of the block rule
# (chunk counts were, since seed 2424), so B = 64 reduced and row 6 of block 1 stood for row 16.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 16, 17) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  r = reshape(x, shape = [(2 + rank.dp), -1, H])
  output y = reshape(slice(slice(r, 0, 1, 2), 1, 6, 7), [1, H]) * 2 : [1, H]
}
