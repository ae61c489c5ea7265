# definedness_normalizers_tp2.sp: normalizers and guarded divisions written out by hand over a
# vocab/hidden dimension sharded on tp=2, against the model's built-in operators.  Every
# division, log, sqrt and rsqrt of the plan is defined wherever the model is: the rsqrt and log
# arguments are positive by structure (a sum of squares plus eps, a sum of exponentials), the
# layernorm variance and the token count are the model's own denominators, and the masked mean
# divides only where the count is positive.  (docs/soundness.md, "Definedness".)

dim B = 4, V = 8, H = 8

model m {
  input x    : [B, V]
  input mask : [B, V]
  input h    : [B, H]
  param w    : [H]
  param b    : [H]
  lsm = log_softmax(x, dim = 1)
  p   = softmax(x, dim = 1)
  ent = sum(where(p > 0, p * log(p), 0), dim = 1)     # 0 log 0 = 0
  cnt = sum(mask, dim = 1)
  avg = where(cnt > 0, sum(x * mask, dim = 1) / cnt, 0)
  rn  = rmsnorm(h, w, eps = 1e-5)
  ln  = layernorm(h, w, b, eps = 1e-5)
  output lsm, p, ent, avg, rn, ln
}

plan p_tp2 of m {
  mesh tp = 2
  x    : [B, V@tp]
  mask : [B, V@tp]
  h    : [B, H@tp]
  w    : [H@tp]
  b    : [H@tp]
  # vocab-parallel log-softmax: global max shift, global sum of exponentials
  mx  = all_reduce(amax(x, dim = 1, keepdim = 1), max, tp)
  se  = all_reduce(sum(exp(x - mx), dim = 1, keepdim = 1), sum, tp)
  lse = mx + log(se)
  lsm = x - lse
  p   = exp(x - mx) / se
  ent = all_reduce(sum(where(p > 0, p * log(p), 0), dim = 1), sum, tp)
  cnt = all_reduce(sum(mask, dim = 1), sum, tp)
  tot = all_reduce(sum(x * mask, dim = 1), sum, tp)
  avg = where(cnt > 0, tot / cnt, 0)
  # hidden-parallel rmsnorm and layernorm: statistics reduced over tp
  ss  = all_reduce(sum(h * h, dim = 1, keepdim = 1), sum, tp)
  rn  = h * rsqrt(ss / H + 1e-5) * w
  mu  = all_reduce(sum(h, dim = 1, keepdim = 1), sum, tp) / H
  var = all_reduce(sum((h - mu) * (h - mu), dim = 1, keepdim = 1), sum, tp) / H
  ln  = (h - mu) * rsqrt(var + 1e-5) * w + b
  output lsm = lsm : [B, V@tp], p = p : [B, V@tp], ent = ent : [B]
  output avg = avg : [B], rn = rn : [B, H@tp], ln = ln : [B, H@tp]
}
