# expect: NOT EQUIVALENT at line 25
# bugs/offset_grouped_literal_split.sp with no literal 3 anywhere: both sides reach part 3 of
# the literal split [8, NH/8] by nested chunks (index 0, 1, 1), so the products rule has no
# factor 3.  Merging the exact part index back with NH/8 makes a position 3*NH/8 + h, a sum of
# an offset and an offset of another size, and the real sizes are checked (the model's
# attention reads key heads at B, the plan's the grouped 3*NKV/8).  No hand-chosen reduction
# of the sweep in offset_grouped_literal_split.sp gives EQUIVALENT.
dim G = 4, NKV = 32, NH = G * NKV, B = 16, S = 2, D = 2
model m {
  input q : [NH, S, D]
  input k : [NKV, S, D]
  input v : [NKV, S, D]
  qm = reshape(chunk(chunk(chunk(reshape(q, [8, NH / 8, S, D]), chunks = 2, dim = 0, index = 0), chunks = 2, dim = 0, index = 1), chunks = 2, dim = 0, index = 1), [NH / 8, S, D])
  km = slice(slice(k, 0, B, 2 * B), 0, 0, NKV / 8)
  vm = slice(slice(v, 0, B, 2 * B), 0, 0, NKV / 8)
  y = attention(qm, km, vm)
  output y
}
plan p of m {
  mesh tp = 2
  q : [NH, S, D]
  k : [NKV, S, D]
  v : [NKV, S, D]
  o = reshape(attention(q, k, v), [8, NH / 8, S, D])
  output y = reshape(chunk(chunk(chunk(o, chunks = 2, dim = 0, index = 0), chunks = 2, dim = 0, index = 1), chunks = 2, dim = 0, index = 1), [NH / 8, S, D]) : [NH / 8, S, D]
}
