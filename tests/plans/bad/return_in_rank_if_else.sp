# expect: return_in_rank_if_else.sp:8:5: error: 'return' where only some of the function's ranks are active (a rank-dependent 'if' or an 'on' block): a function returns on all its ranks at once; assign the value in the branches and return it after them
# if/else in a function, both branches return: the else branch still runs after the then
# branch returned, and its returned name is read on every rank: tp=0 gets t = 3x, not x.
dim N = 70000
func f(x) {
  t = x * 3
  if rank.tp == 0 {
    return x
  } else {
    return t
  }
}
model m {
  input x : [N]
  y = x * 3
  output y
}
plan p of m {
  mesh tp = 2
  x : [N]
  y = f(x) ~ y : [N]
  output y = y : [N]
}
