# expect: NOT EQUIVALENT at line 18
# args: --dims N=52 --dims M=22 --dims H=7
# Offsets (session 28, helper-36): the plan's row is chunk 1 of 4 plus 1 (N/4 + 1), the model's
# chunk 1 of 2 of a slice of extent M plus 3 (M/2 + 3): two blocks plus a literal of different
# monomials, equal at N = 52, M = 22 only (real rows 251 and 58). The block rule keeps each
# apart from its literals only; a block plus a literal beside a descriptor of another monomial
# goes real (src/exec_pos.c note_terms).
dim N = 1000, H = 127, M = 110
model m {
  input x : [N, H]
  y = slice(chunk(slice(x, 0, 0, M), chunks = 2, dim = 0, index = 1), 0, 3, 4) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [N, H]
  h = chunk(x, chunks = 4, dim = 0, index = 1)
  output y = slice(h, 0, 1, 2) * 2 : [1, H]
}
