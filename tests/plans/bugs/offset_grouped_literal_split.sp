# expect: NOT EQUIVALENT at line 29
# A chunk of a literal-sized part of a split of grouped attention heads (session 30's open
# find, helper-43's 1b, rebuilt in session 38): the plan splits the heads [NH] as [8, NH/8]
# and rank 3 takes part 3, heads 3*NH/8.., which through the GQA grouping read key heads
# 3*NKV/8..; the model reads key heads at B.  At G = 3, NKV = 24, B = 9 both are 9, at the
# real G = 4, NKV = 32, B = 16 they are 12 and 16.  The block is a literal one (3 of 8), so
# no block rule compares it; the products rule does: 3 and 8 are literals of the plan, so a
# reduction putting B onto 3*NKV/8 is refused (bad/reduce_dims_grouped_literal_split.sp), and
# the default one keeps B apart (B = 10).  A sweep of all 256 reductions G <= 4, NKV in
# {8, 16, 24, 32}, B <= 16 with --no-cross-check gave no EQUIVALENT.
dim G = 4, NKV = 32, NH = G * NKV, B = 16, S = 2, D = 2
model m {
  input q : [NH, S, D]
  input k : [NKV, S, D]
  input v : [NKV, S, D]
  qm = reshape(chunk(reshape(q, [8, NH / 8, S, D]), chunks = 8, dim = 0, index = 3), [NH / 8, S, D])
  km = slice(slice(k, 0, B, 2 * B), 0, 0, NKV / 8)
  vm = slice(slice(v, 0, B, 2 * B), 0, 0, NKV / 8)
  y = attention(qm, km, vm)
  output y
}
plan p of m {
  mesh tp = 8
  q : [NH, S, D]
  k : [NKV, S, D]
  v : [NKV, S, D]
  o = reshape(attention(q, k, v), [8, NH / 8, S, D])
  on tp = 3 {
    output y = reshape(chunk(o, chunks = tp, dim = 0, index = rank.tp), [NH / 8, S, D]) : [NH / 8, S, D]
  }
}
