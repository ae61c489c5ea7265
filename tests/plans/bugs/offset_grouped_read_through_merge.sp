# expect: NOT EQUIVALENT at line 30
# args: --dims G=3,NKV=24,B=9
# bugs/offset_grouped_read_block_scale.sp behind a view: the grouped attention's heads merged
# with S (reshape to [NH*S, D]), chunked, reshaped back.  A reshape built a merged axis afresh
# and kept an input axis's record only where it had offsets, so the heads (none yet) lost
# sp_pos_t.grp and the chunk's block was compared at NH's scale only: EQUIVALENT with
# `--no-cross-check` (helper-43's review, session 30, find 1).  Now a view keeps grp
# (src/ops_pos.c pos_reshape).  The model repeats the key heads itself (no grouped read of
# its own).
dim G = 4, NKV = 32, NH = G * NKV, B = 16, S = 2, D = 2
model m {
  input q : [NH, S, D]
  input k : [NKV, S, D]
  input v : [NKV, S, D]
  qm = chunk(chunk(chunk(q, chunks = 2, dim = 0, index = 0), chunks = 2, dim = 0, index = 1), chunks = 2, dim = 0, index = 1)
  km = slice(slice(k, 0, B, 2 * B), 0, 0, NKV / 8)
  vm = slice(slice(v, 0, B, 2 * B), 0, 0, NKV / 8)
  kr = reshape(expand(reshape(km, [NKV / 8, 1, S, D]), [NKV / 8, G, S, D]), [NH / 8, S, D])
  vr = reshape(expand(reshape(vm, [NKV / 8, 1, S, D]), [NKV / 8, G, S, D]), [NH / 8, S, D])
  y = attention(qm, kr, vr)
  output y
}
plan p of m {
  mesh tp = 8
  q : [NH, S, D]
  k : [NKV, S, D]
  v : [NKV, S, D]
  o = reshape(attention(q, k, v), [NH * S, D])
  on tp = 3 {
    output y = reshape(chunk(o, chunks = tp, dim = 0, index = rank.tp), [NH / 8, S, D]) : [NH / 8, S, D]
  }
}
