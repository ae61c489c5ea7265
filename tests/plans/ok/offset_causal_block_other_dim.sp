# args: --dims S=42 --dims M=56
# The correct twin of bugs/offset_causal_block_other_dim.sp: the offset rank.cp * (S / cp) is a
# block of the queries' and keys' S (src/exec_pos.c relate_pos), the model's rows S/2 + i:
# EQUIVALENT at the reduced sizes.
dim S = 320, M = 640
model m {
  input x : [S, S]
  y = chunk(causal_softmax(x), chunks = 2, dim = 0, index = 1)
  output y
}
plan p of m {
  mesh cp = 2
  x : [S, S]
  on cp = 1 {
    output y = causal_softmax(chunk(x, chunks = 2, dim = 0, index = 1), offset = rank.cp * (S / cp)) : [S / 2, S]
  }
}
