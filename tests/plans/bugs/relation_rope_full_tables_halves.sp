# expect: NOT EQUIVALENT at line 94
# helper-82's review (session 44): EQUIVALENT by default on 361e3f1 (D = 6): rope with full-width tables
# makes -1/+1 on the halves of D; 24 e4 of the kept half is zero at D = 6 (three kept) only.
# Now rope and rope_grad note their halves as blocks of D/2 (src/exec_pos.c sp_refine_pos, src/members.c sp_members_pieces).
# Fixed in the mechanism (docs/soundness.md, "Relations among sums over a reduced dim"). The output is padded so that the reference executor skips its runs.
dim D = 100002
model m {
  input x : [D]
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
  o = expand(c * 0 + 1, [1, D])
  zr = o * 0
  s = rope(o, zr, o)
  m = (s + 1) / 2
  p1 = sum(m * (x))
  p2 = sum(m * (x) * (x))
  p3 = sum(m * (x) * (x) * (x))
  p4 = sum(m * (x) * (x) * (x) * (x))
  t0 = p1 * p1 * p1 * p1
  c0 = t0
  t1 = p1 * p1 * p2
  t1d1 = t1 + t1
  t1d2 = t1d1 + t1d1
  c1 = t1d1 + t1d2
  t2 = p1 * p3
  t2d1 = t2 + t2
  t2d2 = t2d1 + t2d1
  t2d3 = t2d2 + t2d2
  c2 = t2d3
  t3 = p2 * p2
  t3d1 = t3 + t3
  c3 = t3 + t3d1
  t4 = p4
  t4d1 = t4 + t4
  t4d2 = t4d1 + t4d1
  c4 = t4d1 + t4d2
  e = c0 + c2 + c3 - c1 - c4
  y = p1 + e
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [D]
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
  o = expand(c * 0 + 1, [1, D])
  zr = o * 0
  s = rope(o, zr, o)
  m = (s + 1) / 2
  y = sum(m * (x))
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
