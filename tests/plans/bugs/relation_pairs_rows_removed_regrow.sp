# expect: NOT EQUIVALENT at line 110
# helper-80's review (session 43): EQUIVALENT by default after the slack fixes (b27ef74);
# 120 e5 of the sums of [-1, 2] pairs less rows 0 and 1: regrow checked S = 10, where 5 pair rows less 2 leave 3.
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
  u = sum(reshape(x, [-1, 2]), dim = 1)
  r0 = slice(u, 0, 0, 2)
  w = u
  p1 = sum(u) - sum(r0)
  p2 = sum(u * u) - sum(r0 * r0)
  p3 = sum(u * u * u) - sum(r0 * r0 * r0)
  p4 = sum(u * u * u * u) - sum(r0 * r0 * r0 * r0)
  p5 = sum(u * u * u * u * u) - sum(r0 * r0 * r0 * r0 * r0)
  nwt0 = p5
  nw0d1 = nwt0 + nwt0
  nw0d2 = nw0d1 + nw0d1
  nw0d3 = nw0d2 + nw0d2
  nw0d4 = nw0d3 + nw0d3
  nw0c = nw0d3 + nw0d4
  nwt1 = p4 * p1
  nw1d1 = nwt1 + nwt1
  nw1d2 = nw1d1 + nw1d1
  nw1d3 = nw1d2 + nw1d2
  nw1d4 = nw1d3 + nw1d3
  nw1c = nw1d1 + nw1d2 + nw1d3 + nw1d4
  nwt2 = p3 * p2
  nw2d1 = nwt2 + nwt2
  nw2d2 = nw2d1 + nw2d1
  nw2d3 = nw2d2 + nw2d2
  nw2d4 = nw2d3 + nw2d3
  nw2c = nw2d2 + nw2d4
  nwt3 = p3 * p1 * p1
  nw3d1 = nwt3 + nwt3
  nw3d2 = nw3d1 + nw3d1
  nw3d3 = nw3d2 + nw3d2
  nw3d4 = nw3d3 + nw3d3
  nw3c = nw3d2 + nw3d4
  nwt4 = p2 * p2 * p1
  nw4d1 = nwt4 + nwt4
  nw4d2 = nw4d1 + nw4d1
  nw4d3 = nw4d2 + nw4d2
  nw4c = nwt4 + nw4d1 + nw4d2 + nw4d3
  nwt5 = p2 * p1 * p1 * p1
  nw5d1 = nwt5 + nwt5
  nw5d2 = nw5d1 + nw5d1
  nw5d3 = nw5d2 + nw5d2
  nw5c = nw5d1 + nw5d3
  nwt6 = p1 * p1 * p1 * p1 * p1
  nw6c = nwt6
  e = nw0c + nw3c + nw4c + nw6c - nw1c - nw2c - nw5c
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
  u = sum(reshape(x, [-1, 2]), dim = 1)
  r0 = slice(u, 0, 0, 2)
  w = u
  y = sum(u) - sum(r0)
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
