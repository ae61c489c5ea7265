# expect: UNKNOWN: limit max-elements
# helper-81's probe (session 43), rebuilt by helper-83 (session 44): repeat_interleave then top-k over
# the copies' ties; the count at S = 3 sends the check to the real sizes, where top-k's lanes of
# 200004 compare 4e10 pairs (ties fold to constants, so the store never fills): on 361e3f1 past
# 300 s with no verdict. Now top-k's comparisons count against --max-elements (64 per element;
# src/ops_nn.c fwd_topk_mask), and its loop reads the deadline and stops at a full store.
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
  r = repeat_interleave(x, 2, 0)
  g = 1 - topk_mask(r * 0, k = 2)
  p1 = sum(g * r)
  p2 = sum(g * r * r)
  e = p1 * p1 - p2
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
  r = repeat_interleave(x, 2, 0)
  g = 1 - topk_mask(r * 0, k = 2)
  y = sum(g * r)
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
