# expect: partial_group_partly_active.sp:15:9: error: 'x' is partial(sum) over a group of rank (tp=1), but rank (tp=0) of that group is not among the ranks here: a pending reduction's group holds its parts on every member
# x declared partial(sum@tp) on tp=1 only: the group's leader (tp=0) is not active, so no
# decomposition is made and tp=1 is given x itself instead of an arbitrary part.
# Real input: x = 1 held as parts p0 = 1 (on tp=0, which never uses it), p1 = 0 on tp=1:
# tp=1 outputs 0, the model 2.
dim N = 70000
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 2
  on tp = 1 {
    x : [N] partial(sum@tp)
    y = x * 2 ~ y : [N]
    output y = y : [N]
  }
}
