# expect: NOT EQUIVALENT at line 99
# helper-88's review (session 45): EQUIVALENT by default on 870e29e: two causal masks at offset 0,
# complemented (z - causal_mask(z): keys strictly after the query), on [T, S] and [S, U] of equal sizes,
# multiplied across the shared axis S keep t < s < u, S - 2 of S, where each mask recorded a slack of 1.
# Now values carry how many masks they compose (sp_tensor_t.masks, src/ops.c mask_count), and a
# composition of m records a slack of m on the axes a causal pattern reached (src/members.c
# sp_members_masks). Padded past the reference executor.
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
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  g = unsqueeze(f1, 2) * unsqueeze(f2, 0)
  p1 = sum(g * unsqueeze(unsqueeze(x, 0), 2), dim = 1)
  p2 = sum(g * unsqueeze(unsqueeze(x * x, 0), 2), dim = 1)
  p3 = sum(g * unsqueeze(unsqueeze(x * x * x, 0), 2), dim = 1)
  p4 = sum(g * unsqueeze(unsqueeze(x * x * x * x, 0), 2), dim = 1)
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
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  g = unsqueeze(f1, 2) * unsqueeze(f2, 0)
  p1 = sum(g * unsqueeze(unsqueeze(x, 0), 2), dim = 1)
  p2 = sum(g * unsqueeze(unsqueeze(x * x, 0), 2), dim = 1)
  p3 = sum(g * unsqueeze(unsqueeze(x * x * x, 0), 2), dim = 1)
  p4 = sum(g * unsqueeze(unsqueeze(x * x * x * x, 0), 2), dim = 1)
  yy = p1
  output y = yy : [T, U]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}

