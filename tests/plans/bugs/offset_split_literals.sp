# expect: NOT EQUIVALENT at line 19
# args: --dims N=28 --dims B=10 --dims H=13
# Offsets (session 27, helper-34): reshape(x, [4, N/4, H]) then row 1 of the outer part and row
# 3 of the inner one is row N/4 + 3 of x, a block plus a literal that no axis recorded (two
# literals on two axes), next to the model's size term B: EQUIVALENT at --dims N=28, B=10
# before; real rows 253 and 110. On a part of a split axis only blocks may be added now, and
# literals on the outer part of a split into a count of real size (sp_pos_t.view).
dim N = 1000, H = 127, B = 110
model m {
  input x : [N, H]
  y = slice(slice(x, 0, B, 2 * B), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  g = reshape(x, [4, N / 4, H])
  e = slice(slice(g, 0, 1, 2), 1, 3, 4)
  output y = reshape(e, [1, H]) * 2 : [1, H]
}
