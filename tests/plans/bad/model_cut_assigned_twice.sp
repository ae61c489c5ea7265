# expect: model_cut_assigned_twice.sp:12:3: error: model tensor 'h' is assigned again here (first at line 11), and the plan relates it: relate a tensor the model assigns once (an array element such as h[l] in a loop)
# A model rebinds h through a multi-target assignment (no single-assignment check there, and
# no cut either): a relation `~ h` compares with the first h (2x) and the plan continues from
# the model's last h (5 * the first h's fresh symbols).
dim N = 70000
func g(a) {
  return a * 5, a
}
model m {
  input x : [N]
  h = x * 2
  h, s = g(h)
  z = h * 3
  output z
}
plan p of m {
  mesh tp = 2
  x : [N]
  t = x * 2 ~ h : [N]
  output z = t * 3 : [N]
}
