# expect: NOT EQUIVALENT at line 26
# The model counts the keys query 2 sees under causal_mask(a, offset = 2): 5 (keys 0..4) at the
# real S = 40; the plan writes x * S.  At the checked S = 5 that row is all ones, and a sum of
# copies of one constant was taken as the constant times the real count (40): EQUIVALENT by
# default and with --no-cross-check (helper-61's review, session 38; w : [M], M kept real as a
# user function's argument, keeps the reference executor out).  Now the sum adds the copies it
# holds and the count test sends the stage to the real sizes (src/ops_reduce.c fwd_reduce).
dim S = 40, N = 8, M = 70000
func ident(t, n) {
  return t
}
model m {
  input a : [S, S]
  input x : [N]
  input w : [M]
  c = slice(sum(causal_mask(a, offset = 2), dim = 1), 0, 2, 3)
  y = x * c
  u = w * 2
  output y, u
}
plan p of m {
  mesh dp = 1
  a : [S, S]
  x : [N]
  w : [M]
  y = x * S
  u = ident(w, M) * 2
  output y = y : [N]
  output u = u : [M]
}
