# expect: NOT EQUIVALENT at line 25
# args: --dims S=28 --dims A=10 --dims H=13
# Offsets (session 27, helper-34): embedding_grad(table, dy, ids = [3]) writes dy into row 3 of
# the table's shape, row S/4 + 3 of w on rank 1: the ids were composed nowhere (the rule wanted
# the one-hot form's three operands), so next to the model's slice at A the plan was EQUIVALENT
# at --dims S=28, A=10; real rows 253 and 110 (src/ops_pos.c pos_embedding_grad).  The lr is
# written (1/64): sgd's default 1/1000 is A^3 at A = 10, which the reduction refuses since
# session 33 (src/reduce.c train_constants).
dim S = 1000, H = 127, A = 110
model m {
  param w : [S, H]
  input x : [1, H]
  y = slice(slice(w, 0, A, 2 * A), 0, 0, 1)
  loss = sum(y * x)
  output loss
  train sgd(lr = 1/64)
}
plan p of m {
  mesh dp = 4
  w : [S@dp, H]
  x : [1, H]
  if rank.dp == 1 {
    g = embedding_grad(w, x, ids = [3])
  } else {
    g = w * 0
  }
  output grad.w = g : [S@dp, H]
  omit loss, next.w
}
