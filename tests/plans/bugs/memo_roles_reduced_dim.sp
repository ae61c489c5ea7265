# helper-75's second find (session 42), by default without the cross-check: 720 e6 of a reduced
# dim K's elements (written with doublings so that no literal keeps K from 3) beside the same
# cone over three rows of a table at its real size; the K stage was memoized onto the table's
# and skipped its relations test (K = 12 checked as 3: e6 = 0 there). With the real K = 10^8 and
# an output that made the reference run skip, it was EQUIVALENT by default.
# args: --no-cross-check
# expect: NOT EQUIVALENT at line 182
dim V = 4, E = 1, K = 12
model m {
  input w : [V, E]
  input x : [K, E]
  g = embedding(w, ids = [0, 1, 2])
  t = sum(g, dim = 0)
  z = t * t * t * t * t * t
  s = sum(x, dim = 0)
  y = s * s * s * s * s * s
  output z
  output y
}
plan p of m {
  mesh tp = 2
  w : [V, E]
  x : [K, E]
  g = embedding(w, ids = [0, 1, 2])
  q1 = sum(g, dim = 0)
  q2 = sum(g * g, dim = 0)
  q3 = sum(g * g * g, dim = 0)
  q4 = sum(g * g * g * g, dim = 0)
  q5 = sum(g * g * g * g * g, dim = 0)
  q6 = sum(g * g * g * g * g * g, dim = 0)
  qt0 = q1 * q1 * q1 * q1 * q2
  qt0d0 = qt0 + qt0
  qt0d1 = qt0d0 + qt0d0
  qt0d2 = qt0d1 + qt0d1
  qc0 = qt0 + qt0d0 + qt0d1 + qt0d2
  qt1 = q1 * q1 * q1 * q3
  qt1d0 = qt1 + qt1
  qt1d1 = qt1d0 + qt1d0
  qt1d2 = qt1d1 + qt1d1
  qt1d3 = qt1d2 + qt1d2
  qt1d4 = qt1d3 + qt1d3
  qc1 = qt1d2 + qt1d4
  qt2 = q1 * q1 * q2 * q2
  qt2d0 = qt2 + qt2
  qt2d1 = qt2d0 + qt2d0
  qt2d2 = qt2d1 + qt2d1
  qt2d3 = qt2d2 + qt2d2
  qt2d4 = qt2d3 + qt2d3
  qc2 = qt2 + qt2d1 + qt2d2 + qt2d4
  qt3 = q1 * q1 * q4
  qt3d0 = qt3 + qt3
  qt3d1 = qt3d0 + qt3d0
  qt3d2 = qt3d1 + qt3d1
  qt3d3 = qt3d2 + qt3d2
  qt3d4 = qt3d3 + qt3d3
  qt3d5 = qt3d4 + qt3d4
  qc3 = qt3d0 + qt3d2 + qt3d3 + qt3d5
  qt4 = q1 * q2 * q3
  qt4d0 = qt4 + qt4
  qt4d1 = qt4d0 + qt4d0
  qt4d2 = qt4d1 + qt4d1
  qt4d3 = qt4d2 + qt4d2
  qt4d4 = qt4d3 + qt4d3
  qt4d5 = qt4d4 + qt4d4
  qc4 = qt4d2 + qt4d3 + qt4d4 + qt4d5
  qt5 = q1 * q5
  qt5d0 = qt5 + qt5
  qt5d1 = qt5d0 + qt5d0
  qt5d2 = qt5d1 + qt5d1
  qt5d3 = qt5d2 + qt5d2
  qt5d4 = qt5d3 + qt5d3
  qt5d5 = qt5d4 + qt5d4
  qt5d6 = qt5d5 + qt5d5
  qc5 = qt5d3 + qt5d6
  qt6 = q2 * q2 * q2
  qt6d0 = qt6 + qt6
  qt6d1 = qt6d0 + qt6d0
  qt6d2 = qt6d1 + qt6d1
  qc6 = qt6 + qt6d0 + qt6d1 + qt6d2
  qt7 = q2 * q4
  qt7d0 = qt7 + qt7
  qt7d1 = qt7d0 + qt7d0
  qt7d2 = qt7d1 + qt7d1
  qt7d3 = qt7d2 + qt7d2
  qt7d4 = qt7d3 + qt7d3
  qt7d5 = qt7d4 + qt7d4
  qc7 = qt7d0 + qt7d2 + qt7d3 + qt7d5
  qt8 = q3 * q3
  qt8d0 = qt8 + qt8
  qt8d1 = qt8d0 + qt8d0
  qt8d2 = qt8d1 + qt8d1
  qt8d3 = qt8d2 + qt8d2
  qt8d4 = qt8d3 + qt8d3
  qc8 = qt8d2 + qt8d4
  qt9 = q6
  qt9d0 = qt9 + qt9
  qt9d1 = qt9d0 + qt9d0
  qt9d2 = qt9d1 + qt9d1
  qt9d3 = qt9d2 + qt9d2
  qt9d4 = qt9d3 + qt9d3
  qt9d5 = qt9d4 + qt9d4
  qc9 = qt9d2 + qt9d3 + qt9d4 + qt9d5
  z = qc0 + qc3 + qc4 + qc6 + qc9 - qc1 - qc2 - qc5 - qc7 - qc8
  p1 = sum(x, dim = 0)
  p2 = sum(x * x, dim = 0)
  p3 = sum(x * x * x, dim = 0)
  p4 = sum(x * x * x * x, dim = 0)
  p5 = sum(x * x * x * x * x, dim = 0)
  p6 = sum(x * x * x * x * x * x, dim = 0)
  pt0 = p1 * p1 * p1 * p1 * p2
  pt0d0 = pt0 + pt0
  pt0d1 = pt0d0 + pt0d0
  pt0d2 = pt0d1 + pt0d1
  pc0 = pt0 + pt0d0 + pt0d1 + pt0d2
  pt1 = p1 * p1 * p1 * p3
  pt1d0 = pt1 + pt1
  pt1d1 = pt1d0 + pt1d0
  pt1d2 = pt1d1 + pt1d1
  pt1d3 = pt1d2 + pt1d2
  pt1d4 = pt1d3 + pt1d3
  pc1 = pt1d2 + pt1d4
  pt2 = p1 * p1 * p2 * p2
  pt2d0 = pt2 + pt2
  pt2d1 = pt2d0 + pt2d0
  pt2d2 = pt2d1 + pt2d1
  pt2d3 = pt2d2 + pt2d2
  pt2d4 = pt2d3 + pt2d3
  pc2 = pt2 + pt2d1 + pt2d2 + pt2d4
  pt3 = p1 * p1 * p4
  pt3d0 = pt3 + pt3
  pt3d1 = pt3d0 + pt3d0
  pt3d2 = pt3d1 + pt3d1
  pt3d3 = pt3d2 + pt3d2
  pt3d4 = pt3d3 + pt3d3
  pt3d5 = pt3d4 + pt3d4
  pc3 = pt3d0 + pt3d2 + pt3d3 + pt3d5
  pt4 = p1 * p2 * p3
  pt4d0 = pt4 + pt4
  pt4d1 = pt4d0 + pt4d0
  pt4d2 = pt4d1 + pt4d1
  pt4d3 = pt4d2 + pt4d2
  pt4d4 = pt4d3 + pt4d3
  pt4d5 = pt4d4 + pt4d4
  pc4 = pt4d2 + pt4d3 + pt4d4 + pt4d5
  pt5 = p1 * p5
  pt5d0 = pt5 + pt5
  pt5d1 = pt5d0 + pt5d0
  pt5d2 = pt5d1 + pt5d1
  pt5d3 = pt5d2 + pt5d2
  pt5d4 = pt5d3 + pt5d3
  pt5d5 = pt5d4 + pt5d4
  pt5d6 = pt5d5 + pt5d5
  pc5 = pt5d3 + pt5d6
  pt6 = p2 * p2 * p2
  pt6d0 = pt6 + pt6
  pt6d1 = pt6d0 + pt6d0
  pt6d2 = pt6d1 + pt6d1
  pc6 = pt6 + pt6d0 + pt6d1 + pt6d2
  pt7 = p2 * p4
  pt7d0 = pt7 + pt7
  pt7d1 = pt7d0 + pt7d0
  pt7d2 = pt7d1 + pt7d1
  pt7d3 = pt7d2 + pt7d2
  pt7d4 = pt7d3 + pt7d3
  pt7d5 = pt7d4 + pt7d4
  pc7 = pt7d0 + pt7d2 + pt7d3 + pt7d5
  pt8 = p3 * p3
  pt8d0 = pt8 + pt8
  pt8d1 = pt8d0 + pt8d0
  pt8d2 = pt8d1 + pt8d1
  pt8d3 = pt8d2 + pt8d2
  pt8d4 = pt8d3 + pt8d3
  pc8 = pt8d2 + pt8d4
  pt9 = p6
  pt9d0 = pt9 + pt9
  pt9d1 = pt9d0 + pt9d0
  pt9d2 = pt9d1 + pt9d1
  pt9d3 = pt9d2 + pt9d2
  pt9d4 = pt9d3 + pt9d3
  pt9d5 = pt9d4 + pt9d4
  pc9 = pt9d2 + pt9d3 + pt9d4 + pt9d5
  y = pc0 + pc3 + pc4 + pc6 + pc9 - pc1 - pc2 - pc5 - pc7 - pc8
  output z = z : [E]
  output y = y : [E]
}
