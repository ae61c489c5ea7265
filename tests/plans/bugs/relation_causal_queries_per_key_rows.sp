# expect: NOT EQUIVALENT at line 146
# helper-82's review (session 44): the same as relation_causal_queries_per_key.sp, summed over dim 0 without a transpose.
# Fixed in the mechanism (docs/soundness.md, "Relations among sums over a reduced dim"). The output is padded so that the reference executor skips its runs.
dim T = 1004, S = 1001  # T was 100001 until session 46: 99000 rows past the last key, which no checked size has (UNKNOWN there, as regress/relation_causal_edge_kept_real_large.sp)
model m {
  input x : [T]
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
  f = 1 - causal_mask(expand(c * 0 + 1, [T, S]))
  xc = unsqueeze(x, 1)
  p1 = sum(f * (xc), dim = 0)
  p2 = sum(f * (xc) * (xc), dim = 0)
  p3 = sum(f * (xc) * (xc) * (xc), dim = 0)
  p4 = sum(f * (xc) * (xc) * (xc) * (xc), dim = 0)
  p5 = sum(f * (xc) * (xc) * (xc) * (xc) * (xc), dim = 0)
  p6 = sum(f * (xc) * (xc) * (xc) * (xc) * (xc) * (xc), dim = 0)
  t0 = p1 * p1 * p1 * p1 * p1 * p1
  c0 = t0
  t1 = p1 * p1 * p1 * p1 * p2
  t1d1 = t1 + t1
  t1d2 = t1d1 + t1d1
  t1d3 = t1d2 + t1d2
  c1 = t1 + t1d1 + t1d2 + t1d3
  t2 = p1 * p1 * p1 * p3
  t2d1 = t2 + t2
  t2d2 = t2d1 + t2d1
  t2d3 = t2d2 + t2d2
  t2d4 = t2d3 + t2d3
  t2d5 = t2d4 + t2d4
  c2 = t2d3 + t2d5
  t3 = p1 * p1 * p2 * p2
  t3d1 = t3 + t3
  t3d2 = t3d1 + t3d1
  t3d3 = t3d2 + t3d2
  t3d4 = t3d3 + t3d3
  t3d5 = t3d4 + t3d4
  c3 = t3 + t3d2 + t3d3 + t3d5
  t4 = p1 * p1 * p4
  t4d1 = t4 + t4
  t4d2 = t4d1 + t4d1
  t4d3 = t4d2 + t4d2
  t4d4 = t4d3 + t4d3
  t4d5 = t4d4 + t4d4
  t4d6 = t4d5 + t4d5
  c4 = t4d1 + t4d3 + t4d4 + t4d6
  t5 = p1 * p2 * p3
  t5d1 = t5 + t5
  t5d2 = t5d1 + t5d1
  t5d3 = t5d2 + t5d2
  t5d4 = t5d3 + t5d3
  t5d5 = t5d4 + t5d4
  t5d6 = t5d5 + t5d5
  c5 = t5d3 + t5d4 + t5d5 + t5d6
  t6 = p1 * p5
  t6d1 = t6 + t6
  t6d2 = t6d1 + t6d1
  t6d3 = t6d2 + t6d2
  t6d4 = t6d3 + t6d3
  t6d5 = t6d4 + t6d4
  t6d6 = t6d5 + t6d5
  t6d7 = t6d6 + t6d6
  c6 = t6d4 + t6d7
  t7 = p2 * p2 * p2
  t7d1 = t7 + t7
  t7d2 = t7d1 + t7d1
  t7d3 = t7d2 + t7d2
  c7 = t7 + t7d1 + t7d2 + t7d3
  t8 = p2 * p4
  t8d1 = t8 + t8
  t8d2 = t8d1 + t8d1
  t8d3 = t8d2 + t8d2
  t8d4 = t8d3 + t8d3
  t8d5 = t8d4 + t8d4
  t8d6 = t8d5 + t8d5
  c8 = t8d1 + t8d3 + t8d4 + t8d6
  t9 = p3 * p3
  t9d1 = t9 + t9
  t9d2 = t9d1 + t9d1
  t9d3 = t9d2 + t9d2
  t9d4 = t9d3 + t9d3
  t9d5 = t9d4 + t9d4
  c9 = t9d3 + t9d5
  t10 = p6
  t10d1 = t10 + t10
  t10d2 = t10d1 + t10d1
  t10d3 = t10d2 + t10d2
  t10d4 = t10d3 + t10d3
  t10d5 = t10d4 + t10d4
  t10d6 = t10d5 + t10d5
  c10 = t10d3 + t10d4 + t10d5 + t10d6
  e = c0 + c2 + c3 + c6 + c8 + c9 - c1 - c4 - c5 - c7 - c10
  y = p1 + e
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [T]
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
  f = 1 - causal_mask(expand(c * 0 + 1, [T, S]))
  xc = unsqueeze(x, 1)
  y = sum(f * (xc), dim = 0)
  output y = y : [S]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
