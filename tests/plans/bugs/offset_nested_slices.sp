# expect: NOT EQUIVALENT at line 17
# args: --dims Q1=7 --dims Q2=3 --dims A=10 --dims B=23 --dims H=11
# Offsets (session 26): a slice of a slice starts at Q1 + Q2 of x, a sum of sizes no extent
# shows. At the reduced sizes Q1 + Q2 = A = 10, so the plan's rows were the model's and the
# plan was EQUIVALENT (helper-29's find); at the real sizes it reads rows 100.., the model
# 110... The second slice adds a start of another monomial to the first's: the real sizes
# are checked (src/ops_pos.c).
dim B = 1024, H = 128, Q1 = 70, Q2 = 30, A = 110
model m {
  input x : [B, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, Q2) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  output y = slice(slice(x, 0, Q1, 2 * Q1), 0, Q2, 2 * Q2) * 2 : [Q2, H]
}
