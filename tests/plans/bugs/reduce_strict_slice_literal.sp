# A literal slice start 1 where the model slices at H/2: literals in integer positions keep their
# order relative to every size (--strict-shapes), so H/2 cannot reduce to 1.
# args: --strict-shapes
# expect: NOT EQUIVALENT at line 14
dim B = 2, H = 8
model m {
  input x : [B, H]
  y = slice(x, 1, H/2, H)
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  y = slice(x, 1, 1, H/2 + 1)
  output y = y : [B@dp, H/2]
}
