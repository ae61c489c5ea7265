# expect: name_no_plan.sp:1:1: error: no plan in this file
# a file without a plan
dim B = 4, H = 6
model m {
  input x : [B, H]
  y = relu(x)
  output y
}
