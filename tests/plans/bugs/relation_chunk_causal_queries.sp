# expect: UNKNOWN: limit max-elements
# helper-80's review (session 43): EQUIVALENT by default after the slack fixes (b27ef74);
# a causal mask at offset -2 whose queries are a chunk of S: the room is the chunk's 3 positions less 2, not S's 6 less 2.
# The output is padded so that the reference executor skips its runs. Fixed: a pattern's
# room is on its own axis (src/members.c sp_members_slack: the axis's positions less the
# slack), and a reshape with an inferred extent leaves its operand's dims no room.
dim S = 100002
model m {
  input x : [S]
  input z : [S, S]
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
  zc = chunk(z, 2, 0, 0)
  f = causal_mask(zc, offset = -2)
  w = x
  p1 = sum(f * x, dim = 1)
  p2 = sum(f * x * x, dim = 1)
  nwt0 = p2
  nw0c = nwt0
  nwt1 = p1 * p1
  nw1c = nwt1
  e = nw1c - nw0c
  y = sum(p1 + e)
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [S]
  z : [S, S]
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
  zc = chunk(z, 2, 0, 0)
  f = causal_mask(zc, offset = -2)
  w = x
  y = sum(sum(f * x, dim = 1))
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
