# expect: syntax_empty_array.sp:7:9: error: an array of tensors needs at least one extent
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  param wq[] : [H, H]
}
