# expect: layout_decl_of_computed_value.sp:14:3: error: 'y' is a value the model computes, not one of its inputs or parameters: a plan declares the layout of inputs and parameters only (relate a computed value with '~' on the plan statement that computes it)
# A layout declaration hands the plan the model's own value.  Declaring the model's output y
# and outputting it computed nothing, and was EQUIVALENT at sizes too large for the reference
# executor's re-check (at small sizes the report said EQUIVALENT, then the re-check refused
# the plan: UNKNOWN).
dim B = 512, H = 256
model m {
  input x : [B, H]
  y = exp(x) * 3
  output y
}
plan p of m {
  mesh dp = 2
  y : [B@dp, H]
  output y = y : [B@dp, H]
}
