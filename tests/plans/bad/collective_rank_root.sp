# expect: collective_rank_root.sp:14:31: error: 'rank.tp' differs from rank to rank; a value that is the same on every rank is needed here
# a collective's root written with the rank: every member must name the same root; it was read as
# rank 0's coordinate, so this plan (each rank naming itself) was EQUIVALENT
dim B = 4, H = 4
model m {
  input x : [B, H]
  y = 1 * x
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  v = x * (1 + rank.tp)
  h = broadcast(v, tp, root = rank.tp)
  output y = h : [B, H]
}
