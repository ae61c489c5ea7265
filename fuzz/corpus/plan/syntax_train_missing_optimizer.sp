# expect: syntax_train_missing_optimizer.sp:7:9: error: expected an optimizer name after 'train', found '('
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  param w1 : [H, F]
  train (lr = 1/64)
}
