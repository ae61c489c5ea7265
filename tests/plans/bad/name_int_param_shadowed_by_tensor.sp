# expect: name_int_param_shadowed_by_tensor.sp:7:11: error: the loop variable or integer parameter 'k' has the name of a tensor in scope: rename one of them
# An integer parameter named like a tensor in scope (helper-64's review, session 38): f(x, 2)
# was read as x * k (the tensor k, the model's y) by the checker and as 2x by the reference
# executor; EQUIVALENT at sizes beyond the cross-check.  A tensor parameter named like a global
# tensor is fine: it shadows it in both.
dim B = 512, H = 256
func f(a, k) { return a * k }
model m {
  input x : [B, H]
  input k : [B, H]
  y = x * k
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  k : [B, H]
  output y = f(x, 2) : [B, H]
}
