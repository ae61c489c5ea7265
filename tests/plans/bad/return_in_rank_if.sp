# expect: return_in_rank_if.sp:8:5: error: 'return' where only some of the function's ranks are active (a rank-dependent 'if' or an 'on' block): a function returns on all its ranks at once; assign the value in the branches and return it after them
# A user function whose body returns early on some ranks: `return` inside a rank-dependent
# `if` ends the function on EVERY rank (the interpreter's `returned` flag is global), and a
# returned plain name is read on every rank, so rank tp=1 also returns x instead of x*3.
dim N = 70000
func f(x) {
  if rank.tp == 0 {
    return x
  }
  return x * 3
}
model m {
  input x : [N]
  y = x * 2
  output y
}
plan p of m {
  mesh tp = 2
  x : [N]
  y = f(x) * 2 ~ y : [N]
  output y = y : [N]
}
