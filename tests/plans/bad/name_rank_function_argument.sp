# expect: name_rank_function_argument.sp:17:21: error: 'rank.tp' differs from rank to rank; a value that is the same on every rank is needed here
# an integer argument of a user function that depends on the rank: it becomes one integer variable
# of the body for all ranks (they run in lockstep); it was read as rank 0's coordinate, so this
# plan (rank tp=1 computes 0) was EQUIVALENT
dim B = 4, H = 4
func scaled(x, k) {
  return x * (1 - k)
}
model m {
  input x : [B, H]
  y = 2 * x
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  h = scaled(2 * x, rank.tp)
  output y = h : [B, H]
}
