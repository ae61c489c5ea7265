# expect: syntax_lineage_slice.sp:12:21: error: a row slice must be the only index in the last brackets: T[lo..hi] or T[i][lo..hi]
# a row slice among the indexes of a lineage target
dim B = 4, H = 4
model m {
  input x : [B, H]
  y = 2 * x
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  h = 2 * x ~ y[0, 0..2] : [2, H]
  output y = h : [B, H]
}
