# expect: name_function_shadows_operator.sp:4:6: error: function 'relu' has the name of an operator; a function cannot replace an operator
# A user function named like an operator silently replaced the operator in model and plan alike.
dim N = 2
func relu(x) {
  return x
}
model m {
  input x : [N]
  y = relu(x)
  output y
}
plan p of m {
  mesh tp = 2
  x : [N]
  output y = relu(x) : [N]
}
