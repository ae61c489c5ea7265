# expect: NOT EQUIVALENT at line 90
# helper-81's review (session 43): EQUIVALENT by default after the room fixes (bf53cb1);
# 24 e4 of x less the same with the slice end a loop variable.
# The output is padded so that the reference executor skips its runs. Fixed: the slack of
# slices and ids is read from the evaluated bounds, not their text (src/exec_pos.c).
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
  for i in 2..3 {
    h[i] = slice(x, 0, 0, i)
  }
  p1 = sum(x) - sum(h[2])
  p2 = sum(x * x) - sum(h[2] * h[2])
  p3 = sum(x * x * x) - sum(h[2] * h[2] * h[2])
  p4 = sum(x * x * x * x) - sum(h[2] * h[2] * h[2] * h[2])
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
  for i in 2..3 {
    h[i] = slice(x, 0, 0, i)
  }
  y = sum(x) - sum(h[2])
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
