# expect: NOT EQUIVALENT at line 17
# args: --dims B=7 --dims A=21 --dims N=197 --dims H=11
# Offsets (session 28): rank 3 slices at rank.dp*B, a size term whose coefficient is a rank
# coordinate, no factor of the products rule: equal to the model's A at B = 7, A = 21 only (real
# rows 360 and 110). Size terms of coefficients that are not literal are compared by their
# scales (src/reduce_sums.c sp_pos_named, src/exec_pos.c note_terms).
dim N = 1000, H = 127, A = 110, B = 120
model m {
  input x : [N, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 8
  x : [N, H]
  on dp = 3 {
    output y = slice(slice(x, 0, rank.dp * B, (rank.dp + 1) * B), 0, 0, 1) * 2 : [1, H]
  }
}
