# expect: NOT EQUIVALENT at line 72
# helper-84's review (session 44): EQUIVALENT with --mesh-cutoff on a91bff7 (dp = 8 checked as 3): top-k of
# ties with k = 2*(B/dp) drops the rows of members 0 and 1, reduce_scatter hands each rank its rows,
# and 2 e2 of the members' sums is zero at three members (one nonzero) only. Now the members' bound
# is k less the members a split dim's slack covers whole (src/members.c sp_members_test).
# Fixed in the mechanism (docs/soundness.md, "Positional patterns"). The output is padded so that the reference executor skips its runs.
# args: --mesh-cutoff
dim B = 800000
model m {
  input x : [B]
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
  y = sum(x)
  output y, acc
}
plan p of m {
  mesh dp = 8
  x : [B@dp]
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
  o = expand(c * 0 + 1, [B])
  mk = 1 - topk_mask(o * 0, k = 2 * (B/dp))
  ml = reduce_scatter(mk, 0, max, dp)
  t = sum(ml * x)
  s = all_reduce(sum(x), sum, dp)
  q1 = all_reduce(t, sum, dp)
  q2 = all_reduce(t * t, sum, dp)
  y = s + q1 * q1 - q2
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
