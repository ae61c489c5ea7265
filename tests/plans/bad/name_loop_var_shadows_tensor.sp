# expect: name_loop_var_shadows_tensor.sp:16:7: error: the loop variable or integer parameter 'x' has the name of a tensor in scope: rename one of them
# A loop variable named like a tensor in scope (helper-64's review, session 38): the checker read
# the tensor (t = u * x, the model's y) and the reference executor the variable (t = u), so at
# sizes beyond the cross-check the wrong plan was EQUIVALENT.  One name, one reading: an error.
dim B = 512, H = 256
model m {
  input u : [B, H]
  input x : [B, H]
  y = u * x
  output y
}
plan p of m {
  mesh tp = 2
  u : [B, H@tp]
  x : [B, H@tp]
  for x in 1..2 {
    t = u * x
  }
  output y = t : [B, H@tp]
}
