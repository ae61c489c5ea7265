# expect: name_tensor_assigned_to_loop_var.sp:15:5: error: 'i' is a loop variable or an integer parameter here and is assigned a tensor: rename one of them
# A tensor assigned to the name of the loop variable inside the loop (session 38, with
# bad/name_loop_var_shadows_tensor.sp): which one a later `i` reads is ambiguous, so it is an
# error.
dim B = 8, H = 4
model m {
  input x : [B, H]
  y = x * 2
  output y
}
plan p of m {
  mesh dp = 2
  x : [B@dp, H]
  for i in 0..2 {
    i = x * 2
  }
  output y = x * 2 : [B@dp, H]
}
