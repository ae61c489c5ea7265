# expect: EQUIVALENT
# N = B*S at the real sizes only (three independent dims): the plan reshapes x : [N] into
# [B, S].  The reduction does not keep the product (N = 5, B = 2, S = 3), so the reshape failed
# there and the check stopped with "cannot reshape [5] into [2, 3]", exit 2, for a correct plan
# (helper-61's review, session 38).  A reshape to a written shape whose element count differs
# at the reduced sizes now sends the check to the real sizes (SP_CLAMP_RESHAPE, src/check.c).
dim N = 96, B = 8, S = 12
model m {
  input x : [N]
  y = mean(x)
  output y
}
plan p of m {
  mesh dp = 1
  x : [N]
  y = mean(mean(reshape(x, [B, S]), dim = 1), dim = 0)
  output y = y : []
}
