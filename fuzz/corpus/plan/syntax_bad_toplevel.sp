# expect: syntax_bad_toplevel.sp:4:1: error: expected 'dim', 'model', 'plan' or 'func' at top level, found 'h'
dim B = 8, H = 16, F = 64

h = matmul(x, w1)
