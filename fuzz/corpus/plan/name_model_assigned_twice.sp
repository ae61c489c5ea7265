# expect: name_model_assigned_twice.sp:7:3: error: 'y' is assigned twice (a model is single assignment)
# a model assigns a name twice
dim B = 4, H = 6
model m {
  input x : [B, H]
  y = relu(x)
  y = relu(y)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  output y = x : [B, H]
}
