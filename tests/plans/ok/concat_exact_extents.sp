# concat_exact_extents.sp: a concatenation of parts whose extents are exact (literals: 2 and 3
# rows) makes an extent of 5 at every size, a size of the program the reduction keeps apart
# from the others (src/exec_pos.c sp_note_exact_extent); the check runs again with it among the
# program's sizes and proves the plan at the reduced M.  Before session 33 the unequal parts sent the check to the
# real sizes, where the inputs' 3,000,000 elements stop it (UNKNOWN at max-elements).
dim M = 1000000

model m {
  input a : [3, M]
  input b : [2, M]
  y = concat(b, a, dim = 0) * 3
  output y
}

plan p of m {
  mesh dp = 2
  a : [3, M@dp]
  b : [2, M@dp]
  y = concat(b * 3, a * 3, dim = 0)
  output y : [5, M@dp]
}
