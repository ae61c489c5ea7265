# expect: syntax_missing_rbrace_eof.sp:8:4: error: expected '}', found end of file
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  for l in 0..2 {
    x = relu(x)
  }
