# expect: syntax_bind_missing_value.sp:2:13: error: expected '=' after 'H', found end of file
dim B = 8, H
