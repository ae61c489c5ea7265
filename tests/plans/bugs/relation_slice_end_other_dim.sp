# expect: NOT EQUIVALENT at line 86
# helper-87's review (session 45): EQUIVALENT by default on d88ca01 (S = 5): rows 0..T-1 taken out of the
# power sums by a slice whose end is another dim T (real 3, never reduced); an end with sizes was
# taken as a block's bound. Now an end that is no block of the sliced axis names rows as a literal
# does (src/exec_pos.c, the slice branch of sp_refine_pos). Padded past the reference executor.
dim S = 100002
dim T = 3
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
  r0 = slice(x, 0, 0, T)
  p1 = sum(x) - sum(r0)
  p2 = sum(x * x) - sum(r0 * r0)
  p3 = sum(x * x * x) - sum(r0 * r0 * r0)
  p4 = sum(x * x * x * x) - sum(r0 * r0 * r0 * r0)
  tt1 = p4
  tt1d0 = tt1 + tt1
  tt1d1 = tt1d0 + tt1d0
  tt2 = p3*p1
  tt2d0 = tt2 + tt2
  tt2d1 = tt2d0 + tt2d0
  tt2d2 = tt2d1 + tt2d1
  tt3 = p2*p2
  tt3d0 = tt3 + tt3
  tt4 = p2*p1*p1
  tt4d0 = tt4 + tt4
  tt4d1 = tt4d0 + tt4d0
  tt5 = p1*p1*p1*p1
  e = tt2d2 + (tt3 + tt3d0) + tt5 - (tt1d0 + tt1d1) - (tt4d0 + tt4d1)
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
  r0 = slice(x, 0, 0, T)
  p1 = sum(x) - sum(r0)
  p2 = sum(x * x) - sum(r0 * r0)
  p3 = sum(x * x * x) - sum(r0 * r0 * r0)
  p4 = sum(x * x * x * x) - sum(r0 * r0 * r0 * r0)
  yy = p1
  output y = yy : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}

