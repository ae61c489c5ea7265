# expect: name_shadows_train_gradient.sp:9:3: error: 'grad.w' is a name that 'train' derives (line 11); name the model's tensor otherwise
# A model tensor named like one that train derives (grad.w) was silently replaced by the derived one.
dim N = 2
model m {
  input x : [N]
  param w : [N]
  y = x * w
  loss = sum(y)
  grad.w = y * 3
  output loss
  train sgd(lr = 1/2)
}
plan p of m {
  mesh tp = 2
  x : [N]
  w : [N]
  output loss = sum(x * w) : []
}
