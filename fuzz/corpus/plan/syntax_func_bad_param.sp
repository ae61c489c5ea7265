# expect: syntax_func_bad_param.sp:4:15: error: expected a parameter name, found '1'
dim B = 8, H = 16, F = 64

func layer(x, 1) {
  return x
}
