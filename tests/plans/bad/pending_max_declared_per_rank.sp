# expect: pending_max_declared_per_rank.sp:15:9: error: 'x' is partial(max) over a group of rank (tp=0), but rank (tp=1) of that group is not among the ranks here: a pending reduction's group holds its parts on every member
# x declared partial(max@tp) on tp=0 (that rank holds a part p0 <= x) and whole on tp=1:
# the second declaration clears the binding's pending flag for every rank, and the checker
# models tp=0's part as x itself, so tp=0's arithmetic on its part is "proved".
# Real input: x = 1, p0 = 0 on tp=0, tp=1 holds 1: tp=0 outputs 0, the model 2.
dim N = 70000
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 2
  on tp = 0 {
    x : [N] partial(max@tp)
  }
  on tp = 1 {
    x : [N]
  }
  y = x * 2 ~ y : [N]
  output y = y : [N]
}
