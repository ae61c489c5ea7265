# expect: lineage_slice_rank_bound.sp:14:17: error: 'rank.dp' differs from rank to rank; a value that is the same on every rank is needed here
# a row slice whose bounds depend on the rank: ranks run in lockstep and a cut relates the same
# rows on every rank (a rank's own rows are written with a layout, B@dp); this once read rank.dp
# as 0 on every rank and reported NOT EQUIVALENT on dp rank 1 instead of an error
dim B = 4, H = 4
model m {
  input x : [B, H]
  y = 2 * x
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  h = 2 * x ~ y[rank.dp*(B/2)..(rank.dp+1)*(B/2)] : [B/2, H]
  output y = h : [B@dp, H]
}
