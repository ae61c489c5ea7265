# expect: layout_decl_of_update.sp:16:3: error: 'loss' is a value the model computes, not one of its inputs or parameters: a plan declares the layout of inputs and parameters only (relate a computed value with '~' on the plan statement that computes it)
# The same for a training step: the loss, the gradient and the update declared as if given,
# then output as they are (EQUIVALENT before).
dim B = 4096, H = 512
model m {
  input x : [B, H]
  param w : [H, H]
  loss = sum(matmul(x, w))
  output loss
  train sgd(lr = 1/2)
}
plan p of m {
  mesh dp = 2
  w : [H, H]
  x : [B@dp, H]
  loss : []
  grad.w : [H, H]
  next.w : [H, H]
  output loss = loss : []
  output grad.w = grad.w : [H, H]
  output next.w = next.w : [H, H]
}
