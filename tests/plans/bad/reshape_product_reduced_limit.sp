# expect: reshape_product_reduced_limit.sp:14:17: error: reshape: cannot reshape [3] (3 elements) into [1024, 2048] (2097152 elements)
# A wrong reshape ([B, 2*B] for N = B*S = B*B elements) whose real sizes are beyond
# --max-elements: it fails at the reduced sizes, the real sizes stop at the limit before it,
# so the reduced sizes' error stands with a note saying so (src/check.c, SP_CLAMP_RESHAPE).
dim N = 1048576, B = 1024, S = 1024
model m {
  input x : [N]
  y = mean(x)
  output y
}
plan p of m {
  mesh dp = 1
  x : [N]
  y = mean(mean(reshape(x, [B, B * 2]), dim = 1), dim = 0)
  output y = y : []
}
