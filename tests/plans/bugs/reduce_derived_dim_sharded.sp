# F = 3*H sharded over tp = 4: the real split is 3,3,3,3; a reduction to H = 2 (F = 6) would give
# 2,2,2,0 and never compare the last rank, whose value is wrong here.
# expect: NOT EQUIVALENT at line 18
dim H = 4, F = 3*H
model m {
  input x : [F]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 4
  x : [F@tp]
  if rank.tp == 3 {
    z = x * 3
  } else {
    z = x * 2
  }
  y = z
  output y = y : [F@tp]
}
