# expect: model_input_rebound_multi_target.sp:17:5: error: 'h' is an input or parameter of the model and is assigned here: a model does not change what it is given (name the new value otherwise: h1 = f(h))
# Found by an adversarial review (2026-12-04): EQUIVALENT before (the plan's declaration of the
# name got the model's rebound value, a value the model computes; train's grad and update too).
# A model written in the docs' loop style `h, s = layer(h, w[l])`, whose first h is the input.
# The plan declares the input h and outputs it unchanged: it computes nothing, yet EQUIVALENT,
# because the declaration `h : [S, H]` is handed the model's LAST binding of h (the output of
# the last layer), not the input.
dim S = 300, H = 256, L = 2
func layer(x, w) {
  y = relu(matmul(x, w))
  return y, sum(y)
}
model m {
  input h : [S, H]
  param w[L] : [H, H]
  for l in 0..L {
    h, s = layer(h, w[l])
  }
  output h
}
plan p of m {
  mesh tp = 2
  h : [S, H]
  output h = h : [S, H]
}
