# expect: lineage_missing_model_tensor.sp:15:23: error: lineage to a missing model tensor 'z'
# lineage to a tensor the model does not have
dim B = 4, H = 4, F = 8
model m {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)
  y = relu(h)
  output y
}
plan p of m {
  mesh dp = 2, tp = 2
  x : [B@dp, H]
  w1 : [H, F@tp]
  h = matmul(x, w1) ~ z : [B@dp, F@tp]
  output y = h : [B@dp, F@tp]
}
