# expect: lineage_slice_mixed.sp:15:15: error: 'y' is a cut point the plan already crossed on some of these rows but not on others
# a whole-tensor cut after a row slice of the same model tensor was already cut
dim B = 4, H = 4, NM = 2
model m {
  input x : [B, H]
  y = 2 * x
  z = y + x
  output z
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  xm = slice(x, dim=0, start=0, end=B/NM)
  h0 = 2 * xm ~ y[0..B/NM] : [B/NM, H]
  h = 2 * x ~ y : [B, H]
  output z = h + x : [B, H]
}
