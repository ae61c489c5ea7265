# expect: operator_tensor_after_attribute.sp:12:22: error: reshape: a tensor argument after a non-tensor argument
# operator_tensor_after_attribute.sp: an operator's tensor after its attribute (reshape([2*N], x)) was read as reshape(x, [2*N]) (found by the plan-level differential fuzzer)
dim N = 4
model m {
  input x : [N, 2]
  y = reshape(x, [2*N])
  output y
}
plan p of m {
  mesh dp = 2
  x : [N, 2]
  y = reshape([2*N], x)
  output y = y : [2*N]
}
