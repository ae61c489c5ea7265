# expect: NOT EQUIVALENT at line 77
# helper-80's review (session 43): EQUIVALENT by default after the slack fixes (b27ef74);
# 2 e2 of a chunk of S less its literal rows 0 and 1: at S = 6 the chunk has 3 rows and one is left, but the slack was taken off the whole dim (6 - 2).
# The output is padded so that the reference executor skips its runs. Fixed: a pattern's
# room is on its own axis (src/members.c sp_members_slack: the axis's positions less the
# slack), and a reshape with an inferred extent leaves its operand's dims no room.
dim S = 100002
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
  c = chunk(x, 2, 0, 0)
  r0 = slice(c, 0, 0, 1)
  r1 = slice(c, 0, 1, 2)
  w = c
  p1 = sum(c) - sum(r0) - sum(r1)
  p2 = sum(c * c) - sum(r0 * r0) - sum(r1 * r1)
  nwt0 = p2
  nw0c = nwt0
  nwt1 = p1 * p1
  nw1c = nwt1
  e = nw1c - nw0c
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
  c = chunk(x, 2, 0, 0)
  r0 = slice(c, 0, 0, 1)
  r1 = slice(c, 0, 1, 2)
  w = c
  y = sum(c) - sum(r0) - sum(r1)
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
