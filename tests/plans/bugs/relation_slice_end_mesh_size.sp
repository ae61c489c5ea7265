# expect: NOT EQUIVALENT at line 114
# helper-87's review (session 45): EQUIVALENT by default on d88ca01: a slice in the plan only, ending at
# the mesh size tp = 2, takes rows out of the power sums; now a mesh size names rows as a literal.
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
  q1 = sum(x)
  q2 = sum(x * x)
  q3 = sum(x * x * x)
  q4 = sum(x * x * x * x)
  tt1 = q4
  tt1d0 = tt1 + tt1
  tt1d1 = tt1d0 + tt1d0
  tt2 = q3*q1
  tt2d0 = tt2 + tt2
  tt2d1 = tt2d0 + tt2d0
  tt2d2 = tt2d1 + tt2d1
  tt3 = q2*q2
  tt3d0 = tt3 + tt3
  tt4 = q2*q1*q1
  tt4d0 = tt4 + tt4
  tt4d1 = tt4d0 + tt4d0
  tt5 = q1*q1*q1*q1
  e = tt2d2 + (tt3 + tt3d0) + tt5 - (tt1d0 + tt1d1) - (tt4d0 + tt4d1)
  y = q1 + e
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
  q1 = sum(x)
  q2 = sum(x * x)
  q3 = sum(x * x * x)
  q4 = sum(x * x * x * x)
  tt6 = q4
  tt6d0 = tt6 + tt6
  tt6d1 = tt6d0 + tt6d0
  tt7 = q3*q1
  tt7d0 = tt7 + tt7
  tt7d1 = tt7d0 + tt7d0
  tt7d2 = tt7d1 + tt7d1
  tt8 = q2*q2
  tt8d0 = tt8 + tt8
  tt9 = q2*q1*q1
  tt9d0 = tt9 + tt9
  tt9d1 = tt9d0 + tt9d0
  tt10 = q1*q1*q1*q1
  ea = tt7d2 + (tt8 + tt8d0) + tt10 - (tt6d0 + tt6d1) - (tt9d0 + tt9d1)
  r0 = slice(x, 0, 0, tp)
  p1 = sum(x) - sum(r0)
  p2 = sum(x * x) - sum(r0 * r0)
  p3 = sum(x * x * x) - sum(r0 * r0 * r0)
  p4 = sum(x * x * x * x) - sum(r0 * r0 * r0 * r0)
  tt11 = p4
  tt11d0 = tt11 + tt11
  tt11d1 = tt11d0 + tt11d0
  tt12 = p3*p1
  tt12d0 = tt12 + tt12
  tt12d1 = tt12d0 + tt12d0
  tt12d2 = tt12d1 + tt12d1
  tt13 = p2*p2
  tt13d0 = tt13 + tt13
  tt14 = p2*p1*p1
  tt14d0 = tt14 + tt14
  tt14d1 = tt14d0 + tt14d0
  tt15 = p1*p1*p1*p1
  eb = tt12d2 + (tt13 + tt13d0) + tt15 - (tt11d0 + tt11d1) - (tt14d0 + tt14d1)
  yy = q1 + ea - eb
  output y = yy : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}

