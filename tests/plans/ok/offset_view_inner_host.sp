# Offsets: a block on an inner part of a split scaled otherwise than the axis split (chunk tp of
# HD in [B, NH, HD] of [B, QD], NH reduced otherwise than HD) is a block of HD's scale on an axis
# of QD's (sp_pos_t.host), compared only with blocks that may sit on an axis of QD's scale, not
# with the blocks of H (scaled otherwise) on w's axis: the reduced sizes are checked. Before,
# the block was a size term compared with every descriptor of another scale and the check went
# to the real sizes (tests/cli.sh checks it does not; the pattern of nnScaler's
# br0_bug_allgather_group: chunk tp of D128_2, the inner part of D4096_4 = D32*D128_2).
dim B = 32, NH = 32, HD = 128, H = 4096
dim QD = NH*HD
model m {
  input x : [B, QD]
  input w : [B, H]
  y = reshape(x, [B, NH, HD]) * 2
  z = w * 3
  output y
  output z
}
plan p of m {
  mesh tp = 2
  x : [B, QD]
  w : [B, H@tp]
  output y = chunk(reshape(x, [B, NH, HD]), chunks = tp, dim = 2, index = rank.tp) * 2 : [B, NH, HD@tp]
  output z = w * 3 : [B, H@tp]
}
