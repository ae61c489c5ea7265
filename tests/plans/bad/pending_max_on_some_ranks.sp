# expect: pending_max_on_some_ranks.sp:18:5: error: 'y' would hold a pending max (partial(max@...)) on some ranks and another value on the others, which keep their value here: give it one nature on every rank (reduce the pending value first, or use another name)
# A binding that is pending-max on tp=0 (x's part) and a plain value on tp=1 (u), all-reduced
# with max: the checker gives x's part the value x itself, so it proves max(x, u); on real
# hardware rank tp=0 holds an arbitrary part p0 <= x and the result is max(p0, u).
dim N = 70000
model m {
  input x : [N]
  input u : [N]
  y = maximum(x, u)
  output y
}
plan p of m {
  mesh tp = 2
  x : [N] partial(max@tp)
  u : [N]
  y = u
  on tp = 0 {
    y = x
  }
  r = all_reduce(y, max, tp) ~ y : [N]
  output y = r : [N]
}
