# expect: NOT EQUIVALENT at line 74
# helper-79's review (session 43): EQUIVALENT by default after the first slack fix (789616f);
# power sums less rows 0, 1 and 2 with 6 e3: S = 6 needed, checked at 5.
# The output is padded so that the reference executor skips both its runs: the checker
# decides alone. Fixed: a causal pattern couples the keys' dim to the queries' (src/members.c
# sp_members_couple), and rows named by literal slice ends or embedding ids give their dim
# a slack (src/exec_pos.c); then src/check.c regrow checks a size that holds the monomials.
dim S = 100001
model m {
  input x : [S]
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
  p1 = sum(x) - sum(slice(x, 0, 0, 1)) - sum(slice(x, 0, 1, 2)) - sum(slice(x, 0, 2, 3))
  p2 = sum(x * x) - sum(slice(x, 0, 0, 1) * slice(x, 0, 0, 1)) - sum(slice(x, 0, 1, 2) * slice(x, 0, 1, 2)) - sum(slice(x, 0, 2, 3) * slice(x, 0, 2, 3))
  p3 = sum(x * x * x) - sum(slice(x, 0, 0, 1) * slice(x, 0, 0, 1) * slice(x, 0, 0, 1)) - sum(slice(x, 0, 1, 2) * slice(x, 0, 1, 2) * slice(x, 0, 1, 2)) - sum(slice(x, 0, 2, 3) * slice(x, 0, 2, 3) * slice(x, 0, 2, 3))
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
  y = sum(x) - sum(slice(x, 0, 0, 1)) - sum(slice(x, 0, 1, 2)) - sum(slice(x, 0, 2, 3))
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
