# expect: NOT EQUIVALENT at line 21
# A slice's size bound past its dim at the real sizes only, on an axis whose extent has no
# known monomial: reshape(slice(w, 0, 0, A), [-1]) infers the flat extent 4A.  At the reduced
# A = 6, K = 11 the first K flat elements of the window are the model's (11 <= 24); at the real
# A = 20, K = 96 the slice stops at 80 while the model sums 96, and the sum gives both outputs
# one shape.  Before session 30 the first rule of src/exec_pos.c slice_bounds_real needed the
# extent's monomial and said EQUIVALENT (helper-42's review, find 1); now an extent not known
# sends the check to the real sizes (docs/soundness.md, "Bounds past a dim").
dim A = 20, K = 96, W = 64, N = 6
model m {
  input x : [N]
  input w : [W, 4]
  y = x * sum(slice(reshape(w, [-1]), 0, 0, K))
  output y
}
plan p of m {
  mesh tp = 1
  x : [N]
  w : [W, 4]
  s = sum(slice(reshape(slice(w, 0, 0, A), [-1]), 0, 0, K))
  output y = x * s : [N]
}
