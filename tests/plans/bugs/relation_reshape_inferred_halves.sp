# expect: NOT EQUIVALENT at line 89
# helper-80's review (session 43): EQUIVALENT by default after the slack fixes (b27ef74);
# 24 e4 of x_j + x_(j + S/2), through reshape(x, [2, -1]): the same with the inferred axis inside.
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
  u = sum(reshape(x, [2, -1]), dim = 0)
  w = u
  p1 = sum(w)
  p2 = sum(w * w)
  p3 = sum(w * w * w)
  p4 = sum(w * w * w * w)
  nwt0 = p4
  nw0d1 = nwt0 + nwt0
  nw0d2 = nw0d1 + nw0d1
  nw0c = nw0d1 + nw0d2
  nwt1 = p3 * p1
  nw1d1 = nwt1 + nwt1
  nw1d2 = nw1d1 + nw1d1
  nw1d3 = nw1d2 + nw1d2
  nw1c = nw1d3
  nwt2 = p2 * p2
  nw2d1 = nwt2 + nwt2
  nw2c = nwt2 + nw2d1
  nwt3 = p2 * p1 * p1
  nw3d1 = nwt3 + nwt3
  nw3d2 = nw3d1 + nw3d1
  nw3c = nw3d1 + nw3d2
  nwt4 = p1 * p1 * p1 * p1
  nw4c = nwt4
  e = nw1c + nw2c + nw4c - nw0c - nw3c
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
  u = sum(reshape(x, [2, -1]), dim = 0)
  w = u
  y = sum(w)
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
