# expect: NOT EQUIVALENT at line 18
# args: --dims N=56 --dims M=42 --dims H=5
# Offsets (session 28): rank 3's block of x : [N@dp] (dp = 8) starts at 3*N/8; the model's row is
# chunk 1 of 2 of the window 0..M of N, M/2. Two blocks of different scales on one axis: the
# chunk's block is of the window's scale, not N's, and the coefficient 3 is no factor of the
# products rule, so they were equal at N = 56, M = 42 only (real rows 375 and 55). A block of a
# window scaled otherwise is a size term (sp_pos_t.rescaled), which note_terms compares.
dim N = 1000, H = 127, M = 110
model m {
  input x : [N, H]
  y = slice(chunk(slice(x, 0, 0, M), chunks = 2, dim = 0, index = 1), 0, 0, 1) * 2
  output y
}
plan p of m {
  mesh dp = 8
  x : [N@dp, H]
  on dp = 3 {
    output y = slice(x, 0, 0, 1) * 2 : [1, H]
  }
}
