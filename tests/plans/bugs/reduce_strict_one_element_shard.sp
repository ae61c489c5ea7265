# A local reduction over a sharded dim: amax where a sum is needed is invisible when each shard
# holds one element; --strict-shapes keeps at least two per shard.
# args: --strict-shapes
# expect: NOT EQUIVALENT at line 15
dim B = 4, H = 8
model m {
  input x : [B, H]
  y = sum(x, dim = 1)
  output y
}
plan p of m {
  mesh tp = 4
  x : [B, H@tp]
  s = amax(x, dim = 1)
  y = all_reduce(s, sum, tp)
  output y = y : [B]
}
