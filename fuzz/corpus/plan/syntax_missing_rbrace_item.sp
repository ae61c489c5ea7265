# expect: syntax_missing_rbrace_item.sp:8:1: error: expected '}', found 'plan'
dim B = 8, H = 16, F = 64

model mlp {
  input x : [B, H]
  output x

plan p of mlp {
  mesh dp = 2
}
