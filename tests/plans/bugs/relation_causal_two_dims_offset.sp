# expect: NOT EQUIVALENT at line 78
# helper-79's review (session 43): EQUIVALENT by default after the first slack fix (789616f);
# the same at offset -1 with 6 e3.
# The output is padded so that the reference executor skips both its runs: the checker
# decides alone. Fixed: a causal pattern couples the keys' dim to the queries' (src/members.c
# sp_members_couple), and rows named by literal slice ends or embedding ids give their dim
# a slack (src/exec_pos.c); then src/check.c regrow checks a size that holds the monomials.
dim T = 1000, S = 1001
model m {
  input x : [S]
  input z : [T, S]
  input v : [2, 2, 2, 2, 2, 2, 2, 2]
  acc = v * 1
  for i0 in 0..2 {
    for i1 in 0..2 {
      for i2 in 0..2 {
        for i3 in 0..2 {
          for i4 in 0..2 {
            for i5 in 0..2 {
              for i6 in 0..2 {
                for i7 in 0..2 {
                  for i8 in 0..2 {
                    for i9 in 0..2 {
                      acc += v
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  f = causal_mask(z, offset = -1)
  p1 = sum(f * x, dim = 1)
  p2 = sum(f * x * x, dim = 1)
  p3 = sum(f * x * x * x, dim = 1)
  nwt0 = p3
  nwc0 = nwt0 + nwt0
  nwt1 = p2 * p1
  nwt1d1 = nwt1 + nwt1
  nwc1 = nwt1 + nwt1d1
  nwt2 = p1 * p1 * p1
  nwc2 = nwt2
  e = nwc0 + nwc2 - nwc1
  y = p1 + e
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [S]
  z : [T, S]
  v : [2, 2, 2, 2, 2, 2, 2, 2]
  acc = v * 1
  for i0 in 0..2 {
    for i1 in 0..2 {
      for i2 in 0..2 {
        for i3 in 0..2 {
          for i4 in 0..2 {
            for i5 in 0..2 {
              for i6 in 0..2 {
                for i7 in 0..2 {
                  for i8 in 0..2 {
                    for i9 in 0..2 {
                      acc += v
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  f = causal_mask(z, offset = -1)
  y = sum(f * x, dim = 1)
  output y = y : [T]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
