# expect: lineage_slice_out_of_range.sp:14:37: error: rows 4..6 are not a non-empty slice of dim 0 of 'y' (4 rows)
# a row slice past the end of the model tensor (micro-batch 1 relates rows 2..3 of 2)
dim B = 4, H = 4, NM = 2
model m {
  input x : [B, H]
  y = 2 * x
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  for mb in 0..NM {
    xm = slice(x, dim=0, start=mb*(B/NM), end=(mb+1)*(B/NM))
    h[mb] = 2 * xm ~ y[(mb+1)*(B/NM)..(mb+2)*(B/NM)] : [B/NM, H]
  }
  output y = concat(h[0], h[1], dim=0) : [B, H]
}
