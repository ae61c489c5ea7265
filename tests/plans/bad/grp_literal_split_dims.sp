# expect: grp_literal_split_dims.sp:6:5: error: the sizes given with --dims are not an admissible reduction (G=3): a size of 128 at the real sizes (line 6) reduces to 72, where the products of sizes 1 and 72 differ by a product of mesh sizes, literals and constants; at the real sizes 1 and 128 differ by another
# args: --dims G=3,NKV=24,B=9
# bugs/offset_grouped_literal_split.sp at the reduction that put the key heads its literal
# block reads (3*NKV/8 = 9) onto the model's B = 9: refused, the sizes are related through
# the plan's literals at the reduced sizes only (the products rule).
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
