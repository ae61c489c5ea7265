# A plain alias in the else branch of a rank-dependent if must not overwrite rank 0's (wrong) value
# expect: NOT EQUIVALENT at line 13
dim N = 4
model m {
  input a : [N]
  g = a
  output g
}
plan p of m {
  mesh dp = 2
  a : [N]
  if rank.dp == 0 {
    g = a * 3
  } else {
    g = a
  }
  output g = g : [N]
}
