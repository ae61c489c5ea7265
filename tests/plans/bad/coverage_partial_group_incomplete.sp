# expect: coverage_partial_group_incomplete.sp:13:18: error: output 'y' has a pending sum over a group of rank (tp=0), but rank (tp=1) of that group does not declare it
# A pending-sum output group that misses a rank compared a partial sum (it gave UNKNOWN with 'rank (tp=-1)').
dim B = 4, H = 2
model m {
  input x : [B, H]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H] partial(sum@tp)
  on tp = 0 {
    output y = x * 2 : [B, H] partial(sum@tp)
  }
}
