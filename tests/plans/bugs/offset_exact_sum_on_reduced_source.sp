# expect: NOT EQUIVALENT at line 19
# args: --dims D=83 --dims A=40 --dims H=11 --dims NH=32 --dims NKV=8
# Offsets (session 27, helper-33): NH and NKV keep their real sizes, so the starts NH and NKV
# are literal terms and row NH + NKV an exact sum; it was accepted because the slice at NH has
# an extent (NH) that is exact, but its rows are rows of x, whose dim D is reduced, and the
# model reads row A there: at --dims A=40 the sum equalled A and the plan was EQUIVALENT; real
# rows 40 and 100. An exact sum is one only on an axis whose every ancestor's extent is exact
# (sp_pos_t.inexact, src/ops_pos.c).
dim D = 1024, H = 128, NH = 32, NKV = 8, A = 100
model m {
  input x : [D, H]
  y = slice(slice(x, 0, A, 2 * A), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [D, H]
  h = slice(x, 0, NH, 2 * NH)
  output y = slice(h, 0, NKV, NKV + 1) * 2 : [1, H]
}
