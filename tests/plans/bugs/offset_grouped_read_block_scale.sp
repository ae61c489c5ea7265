# expect: NOT EQUIVALENT at line 30
# args: --dims G=3,NKV=24,B=9
# A chunk of a grouped attention's output heads: rank 3's chunk of tp = 8 is a block of NH's
# scale (3 * NH/8), but through the GQA grouping it reads kv heads 3 * NKV/8, a position of
# NKV's scale.  The model reads kv heads at B, a dim scaled like NH, so before session 30 the
# two were compared as one scale and kept apart: at G = 3, NKV = 24, B = 9 = 3 * 24/8 the plan
# reads the model's kv heads, at the real G = 4, NKV = 32 heads 12.. where the model reads
# 16.. (helper-42's review, find 2).  The model reaches q heads 3 * NH/8 by nested chunks (no
# literal 3, so B/NKV = 3/8 is no relation the products rule keeps).  Now a block on a
# grouped read's output heads is also compared as a block of the grouped operand's heads
# (sp_pos_t.grp, src/exec_pos.c note_terms): NKV's scale against B's, the real sizes.
dim G = 4, NKV = 32, NH = G * NKV, B = 16, S = 2, D = 2
model m {
  input q : [NH, S, D]
  input k : [NKV, S, D]
  input v : [NKV, S, D]
  qm = chunk(chunk(chunk(q, chunks = 2, dim = 0, index = 0), chunks = 2, dim = 0, index = 1), chunks = 2, dim = 0, index = 1)
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
  o = attention(q, k, v)
  on tp = 3 {
    output y = chunk(o, chunks = tp, dim = 0, index = rank.tp) : [NH / 8, S, D]
  }
}
