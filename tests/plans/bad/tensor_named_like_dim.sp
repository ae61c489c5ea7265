# expect: tensor_named_like_dim.sp:18:3: error: 'N' is a dimension; a tensor, loop variable or parameter cannot take its name
# A plan tensor named like a dim (helper-52's note, session 33): the layout `[N@tp, H]` of the
# output read N as the dim in the checker and as the tensor in the reference executor, which
# refused the plan; with --no-cross-check the plan was EQUIVALENT on the checker's reading.
# A size expression and a value expression must not read the same name two ways, so a tensor,
# a loop variable or a function parameter cannot take the name of a dim or a mesh axis.
dim N = 8, H = 4

model m {
  input x : [N, H]
  y = x * 2
  output y
}

plan p of m {
  mesh tp = 2
  x : [N@tp, H]
  N = x * 2
  y = N
  output y = y : [N@tp, H]
}
