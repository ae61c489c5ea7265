# expect: NOT EQUIVALENT at line 18
# args: --dims A=5 --dims H=11
# Offsets (session 28, helper-36): the plan reads row 5 of an exact dim as 3 + 2 (an exact sum);
# the model's causal mask has `offset = A`, a size term on the queries' and keys' axes of exact
# extent that relate_pos did not note, so A = 7 could reduce to 5 (src/exec_pos.c
# sp_size_on_exact).
dim V = 9, A = 7, H = 1000
model m {
  input x : [H, V, V]
  y = causal_softmax(slice(x, 1, 0, 1), offset = A)
  output y
}
plan p of m {
  mesh dp = 1
  x : [H, V, V]
  b = expand(slice(x, 1, 0, 1), [H, V, V])
  c = causal_softmax(b, offset = 0)
  output y = slice(chunk(c, 3, 1, 1), 1, 2, 3) : [H, 1, V]
}
