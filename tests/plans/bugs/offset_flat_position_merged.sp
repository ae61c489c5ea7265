# expect: NOT EQUIVALENT at line 19
# args: --dims S=23 --dims A=53 --dims B=7
# Offsets (session 27, helper-34): a slice at A of reshape(x, [S * S]) reads x[A div S, A mod S],
# an additive relation of sizes the merged axis's descriptors did not show; the model reads
# x[2, B]. At --dims S=23, A=53, B=7 (53 = 2*23 + 7) the plan was EQUIVALENT; real x[2, 50] and
# x[2, 40]. Only blocks may be added on a merged axis now (sp_pos_t.view, src/ops_pos.c).
dim S = 300, A = 650, B = 40
model m {
  input x : [S, S]
  r = slice(x, 0, 2, 3)
  y = slice(slice(r, 1, B, 2 * B), 1, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [S, S]
  f = reshape(x, [S * S])
  e = slice(slice(f, 0, A, 2 * A), 0, 0, 1)
  output y = reshape(e, [1, 1]) * 2 : [1, 1]
}
