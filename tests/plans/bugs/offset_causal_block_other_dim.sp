# expect: NOT EQUIVALENT at line 18
# args: --dims S=42 --dims M=56
# Offsets (helper-37): a causal `offset = rank.cp * (M / cp)` was block rank.cp of M whatever M
# is; with queries and keys of S it is a position on their axes scaled as M, and the mask kept
# keys j <= i + 3*M/8 against the model's j <= S/2 + i: equal at S = 42, M = 56 only (real 160
# and 240). The offset is a block only of the queries' and the keys' scale (src/exec_pos.c
# relate_pos), else a size term of a coefficient that is not literal.
dim S = 320, M = 640
model m {
  input x : [S, S]
  y = chunk(causal_softmax(x), chunks = 2, dim = 0, index = 1)
  output y
}
plan p of m {
  mesh cp = 8
  x : [S, S]
  on cp = 3 {
    output y = causal_softmax(chunk(x, chunks = 2, dim = 0, index = 1), offset = rank.cp * (M / cp)) : [S / 2, S]
  }
}
