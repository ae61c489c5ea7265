# expect: model_input_rebound_accumulate.sp:9:3: error: 'x' is an input or parameter of the model and is assigned here: a model does not change what it is given (name the new value otherwise: h1 = f(h))
# Found by an adversarial review (2026-12-04): EQUIVALENT before (the plan's declaration of the
# name got the model's rebound value, a value the model computes; train's grad and update too).
# The model rebinds its input x with `+=`; the plan's declaration `x : [N]` is handed the
# model's LAST binding of x (2x), not the input.  The plan computes 3x, the model 6x.
dim N = 70000
model m {
  input x : [N]
  x += x
  y = x * 3
  output y
}
plan p of m {
  mesh tp = 2
  x : [N]
  output y = x * 3 : [N]
}
