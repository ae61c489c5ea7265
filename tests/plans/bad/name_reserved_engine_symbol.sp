# expect: name_reserved_engine_symbol.sp:8:9: error: names beginning with '__' are reserved for the engine's symbols
# A user tensor named like the engine's reserved symbol __sqrt_pi would BE that symbol (certificates
# give it the value 1): names beginning with '__' are unreachable for users.
dim N = 2
model m {
  input x : [N]
  y = x * 2
  input __sqrt_pi : []
  output y
}
plan p of m {
  mesh tp = 2
  x : [N]
  output y = x * 2 : [N]
}
