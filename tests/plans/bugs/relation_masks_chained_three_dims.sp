# expect: NOT EQUIVALENT at line 98
# helper-87's review (session 45): EQUIVALENT by default on d88ca01 (T = S = U = 11 after regrow):
# two causal masks at offset -5 over [T, S] and [S, U], multiplied, keep s in [u + 5, t - 5]: the
# offsets add. Now values carry the slack of the masks they compose (sp_tensor_t.masks: src/ops.c
# mask_count, src/exec_pos.c for a literal offset) and a composition records its sum (src/members.c
# sp_members_masks).
dim T = 100002
dim S = 100002
dim U = 100002
model m {
  input x : [S]
  input c : [1]
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
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  f1 = causal_mask(z1, offset = 0 - 5)
  f2 = causal_mask(z2, offset = 0 - 5)
  g = unsqueeze(f1, 1) * unsqueeze(transpose(f2, 0, 1), 0)
  p1 = sum(g * x, dim = 2)
  p2 = sum(g * x * x, dim = 2)
  p3 = sum(g * x * x * x, dim = 2)
  p4 = sum(g * x * x * x * x, dim = 2)
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
  c : [1]
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
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  f1 = causal_mask(z1, offset = 0 - 5)
  f2 = causal_mask(z2, offset = 0 - 5)
  g = unsqueeze(f1, 1) * unsqueeze(transpose(f2, 0, 1), 0)
  p1 = sum(g * x, dim = 2)
  p2 = sum(g * x * x, dim = 2)
  p3 = sum(g * x * x * x, dim = 2)
  p4 = sum(g * x * x * x * x, dim = 2)
  yy = p1
  output y = yy : [T, U]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}

