# A chunk count the block rule does not follow (a dim plus a rank coordinate, NC + rank.dp):
# every size keeps its real size. Refused before the fix of session 25 ("no admissible shape
# reduction"): sizes already at their real size were counted as not followed too.
dim B = 64, NC = 2, H = 2
model m {
  input x : [B, H]
  y = slice(x, 0, 1, 2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = chunk(x, NC + rank.dp, 0, 0)
  output y = slice(c, 0, 1, 2) * 2 : [1, H]
}
