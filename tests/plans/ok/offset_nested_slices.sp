# args: --dims Q1=7 --dims Q2=3 --dims A=10 --dims B=23 --dims H=11
# Offsets (session 26): the twin of bugs/offset_nested_slices.sp with the model's A = Q1 + Q2
# at the real sizes. The composed offset sends the check to the real sizes, where it holds.
dim B = 1024, H = 128, Q1 = 70, Q2 = 30, A = 100
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
