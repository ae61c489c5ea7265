# expect: NOT EQUIVALENT at line 15
# A chunk count written with a rank coordinate, (2 + rank.dp) on a mesh of dp = 1 (the plan-level
# fuzzer, seed 2424, mutant 3425 of bugs/reduce_block_literal_chunk.sp): the count was no divisor,
# so chunk 1's row 19 stood for the model's row 40 at B = 42. A count's values are divisors.
dim B = 64, H = 2048
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(x, (2 + rank.dp), 0, 1)
  output y = (slice(c, 0, 19, 20) * 2) * (7/5) / (7/5) : [1, H]
}
