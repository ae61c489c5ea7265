# expect: NOT EQUIVALENT at line 66
# helper-80's review (session 43): EQUIVALENT by default after the slack fixes (b27ef74);
# each rank adds 2 e2 of its local rows of x : [S@tp] other than rows 0 and 1 (plan side only): a shard of 3 rows at S = 6 leaves one.
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
  y = sum(x)
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [S@tp]
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
  r0 = slice(x, 0, 0, 2)
  q1 = sum(x) - sum(r0)
  q2 = sum(x * x) - sum(r0 * r0)
  e = q1 * q1 - q2
  y = all_reduce(sum(x) + e, sum, tp)
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
