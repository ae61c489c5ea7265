# expect: NOT EQUIVALENT at line 90
# helper-79's review (session 43): EQUIVALENT by default after the first slack fix (789616f);
# a causal mask with queries of T and keys of S: four kept keys need T >= 4 (query 3), but T and S had their slack each alone; checked at T = 3, S = 5.
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
  f = causal_mask(z, offset = 0)
  p1 = sum(f * x, dim = 1)
  p2 = sum(f * x * x, dim = 1)
  p3 = sum(f * x * x * x, dim = 1)
  p4 = sum(f * x * x * x * x, dim = 1)
  nwt0 = p4
  nwt0d1 = nwt0 + nwt0
  nwt0d2 = nwt0d1 + nwt0d1
  nwc0 = nwt0d1 + nwt0d2
  nwt1 = p3 * p1
  nwt1d1 = nwt1 + nwt1
  nwt1d2 = nwt1d1 + nwt1d1
  nwt1d3 = nwt1d2 + nwt1d2
  nwc1 = nwt1d3
  nwt2 = p2 * p2
  nwt2d1 = nwt2 + nwt2
  nwc2 = nwt2 + nwt2d1
  nwt3 = p2 * p1 * p1
  nwt3d1 = nwt3 + nwt3
  nwt3d2 = nwt3d1 + nwt3d1
  nwc3 = nwt3d1 + nwt3d2
  nwt4 = p1 * p1 * p1 * p1
  nwc4 = nwt4
  e = nwc1 + nwc2 + nwc4 - nwc0 - nwc3
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
  f = causal_mask(z, offset = 0)
  y = sum(f * x, dim = 1)
  output y = y : [T]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
