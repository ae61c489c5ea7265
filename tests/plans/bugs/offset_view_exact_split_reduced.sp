# expect: NOT EQUIVALENT at line 18
# args: --dims A=35 --dims V=420 --dims H=250
# Offsets (helper-37): a reshape split [V, H] -> [A, V/A, H] of an exact V cut a reduced extent
# V/A from it without sp_size_on_exact, so the plan's exact sum 5 + 1 (chunk 1 of 84, then a
# literal slice) was not sent real, and the model's row (V/A)/2 = 6 at A = 35 equalled it
# (really 5). A reshape's split part of a reduced extent cut from an exact axis calls it
# (src/exec_pos.c view_scales).
dim V = 420, A = 42, H = 250
model m {
  input x : [V, H]
  r = chunk(reshape(x, [A, V / A, H]), chunks = 2, dim = 1, index = 1)
  y = reshape(slice(slice(r, 0, 0, 1), 1, 0, 1), [1, H]) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [V, H]
  output y = slice(chunk(x, 84, 0, 1), 0, 1, 2) * 2 : [1, H]
}
