# expect: name_plan_of_unknown_model.sp:9:11: error: plan 'p' is of model 'mm', but the model is 'm'
# a plan of a model the file does not define
dim B = 4, H = 6
model m {
  input x : [B, H]
  y = relu(x)
  output y
}
plan p of mm {
  mesh tp = 2
  x : [B, H]
  output y = x : [B, H]
}
