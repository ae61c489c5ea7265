# expect: reduce_block_literal_loop_chunks.sp:6:5: error: the sizes given with --dims are not an admissible reduction (B=336): a block of 64 elements at the real sizes (line 14, divided by 16) has 21 at the reduced ones, not above the literal position 41
# args: --dims B=336
# A chunk in a loop cuts its own blocks again (session 25): four iterations make blocks of
# B/16, and --dims B=336 made chunk 1's row 19 the model's row 40 (really row 83); EQUIVALENT
# before, when a program's cuts were counted by their sites.
dim B = 1024, H = 2
model m {
  input x : [B, H]
  y = slice(x, 0, 40, 41) * 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [B, H]
  c = x
  for i in 0..3 {
    c = chunk(c, 2, 0, 0)
  }
  d = chunk(c, 2, 0, 1)
  output y = slice(d, 0, 19, 20) * 2 : [1, H]
}
