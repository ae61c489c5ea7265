# expect: chunk_size_count_dims.sp:6:5: error: the sizes given with --dims are not an admissible reduction (B=15): a size of 80 at the real sizes (line 14) makes 3 chunks of 3 there, the last partial, and 3 at the reduced ones, the last whole
# args: --dims B=15
# A chunk count that is a size (review of 2026-12-04, helper-30): --dims B=15 made chunk 2 of B by
# NC = 3 whole (5 rows for B/NC) where the real B = 80 gives 26; the plan divides by B/NC. The
# number of chunks and a partial last one are kept against every size now.
dim B = 80, NC = 3, H = 2048
model m {
  input x : [B, H]
  y = mean(chunk(x, NC, 0, 2), dim = 0)
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  output y = sum(chunk(x, NC, 0, 2), dim = 0) * NC / B : [H]
}
