# llama_rmsnorm_eps_one_rank: the MLP's RMSNorm eps depends on rank.tp: tp rank 1 uses 1/100001 instead of 1e-5
# expect: NOT EQUIVALENT at line 93
# llama_layer.sp: one Llama-style decoder layer (RMSNorm, RoPE, causal grouped-query attention,
# SwiGLU MLP, residual connections) trained with SGD, and its Megatron plan on TP=2 with sequence
# parallelism: the residual stream and the RMSNorms run sequence-sharded ([S@tp, H]); an
# all_gather over the sequence ("g") before attention and the MLP, column-parallel QKV and
# gate/up projections (heads split over tp), row-parallel output/down projections followed by a
# reduce_scatter over the sequence ("g-bar"). The explicit backward pass uses the conjugate
# collectives (all_gather <-> reduce_scatter) and all-reduces the RMSNorm weight gradients, which
# are partial over the sequence shards.
# The loss is sum(y * cot), a cotangent-weighted sum of the layer output, so dL/dy = cot is
# symbolic and the whole backward pass is checked with a generic upstream gradient.

# Declared in this order the reduced sizes are HD=2, NKV=2, S=4, NH=4, H=3, F=6. The attention
# scale is written out as 1/sqrt(HD) = 1/8 of the real head dim (the default would be 1/sqrt of the
# reduced one).
dim HD = 64, NKV = 2, S = 8, NH = 4, H = 256, F = 768
dim QD = NH*HD, KD = NKV*HD

model llama {
  input x   : [S, H]
  input cos : [S, HD/2]
  input sin : [S, HD/2]
  input cot : [S, H]                       # upstream gradient of the layer output
  param wn1 : [H]
  param wq  : [H, QD]
  param wk  : [H, KD]
  param wv  : [H, KD]
  param wo  : [QD, H]
  param wn2 : [H]
  param wg  : [H, F]
  param wu  : [H, F]
  param wd  : [F, H]

  h1 = rmsnorm(x, wn1, eps = 1e-5)
  q  = matmul(h1, wq)
  k  = matmul(h1, wk)
  v  = matmul(h1, wv)
  qh = transpose(reshape(q, [S, NH, HD]), 0, 1)     # [NH, S, HD]
  kh = transpose(reshape(k, [S, NKV, HD]), 0, 1)    # [NKV, S, HD]
  vh = transpose(reshape(v, [S, NKV, HD]), 0, 1)
  qr = rope(qh, cos, sin)
  kr = rope(kh, cos, sin)
  o  = attention(qr, kr, vh, causal = 1, scale = 1/8)   # GQA: query head h reads kv head h/(NH/NKV)
  oc = reshape(transpose(o, 0, 1), [S, QD])
  a  = matmul(oc, wo)
  r  = x + a
  h2 = rmsnorm(r, wn2, eps = 1e-5)
  g  = matmul(h2, wg)
  u  = matmul(h2, wu)
  m  = silu(g) * u
  d  = matmul(m, wd)
  y  = r + d
  loss = sum(y * cot)
  output loss, y
  train sgd(lr = 1/64)
}

plan tp2_sp of llama {
  mesh tp = 2
  x   : [S@tp, H]                          # sequence-parallel residual stream
  cot : [S@tp, H]
  cos : [S, HD/2]
  sin : [S, HD/2]
  wn1 : [H]
  wq  : [H, QD@tp]                         # column-parallel: query heads split over tp
  wk  : [H, KD@tp]                         # kv heads split over tp
  wv  : [H, KD@tp]
  wo  : [QD@tp, H]                         # row-parallel
  wn2 : [H]
  wg  : [H, F@tp]                          # column-parallel
  wu  : [H, F@tp]
  wd  : [F@tp, H]                          # row-parallel

  # ---- forward: attention block
  h1s = rmsnorm(x, wn1, eps = 1e-5)                    ~ h1 : [S@tp, H]
  h1  = all_gather(h1s, 0, tp)                         ~ h1 : [S, H]
  q   = matmul(h1, wq)                                 ~ q : [S, QD@tp]
  k   = matmul(h1, wk)                                 ~ k : [S, KD@tp]
  v   = matmul(h1, wv)                                 ~ v : [S, KD@tp]
  qh  = transpose(reshape(q, [S, NH/tp, HD]), 0, 1)
  kh  = transpose(reshape(k, [S, NKV/tp, HD]), 0, 1)
  vh  = transpose(reshape(v, [S, NKV/tp, HD]), 0, 1)   ~ vh : [NKV@tp, S, HD]
  qr  = rope(qh, cos, sin)                             ~ qr : [NH@tp, S, HD]
  kr  = rope(kh, cos, sin)                             ~ kr : [NKV@tp, S, HD]
  o   = attention(qr, kr, vh, causal = 1, scale = 1/8) ~ o : [NH@tp, S, HD]
  oc  = reshape(transpose(o, 0, 1), [S, QD/tp])        ~ oc : [S, QD@tp]
  ap  = matmul(oc, wo)                                 ~ a : [S, H] partial(sum@tp)
  a   = reduce_scatter(ap, 0, sum, tp)                 ~ a : [S@tp, H]
  r   = x + a                                          ~ r : [S@tp, H]

  # ---- forward: MLP block
  h2s = rmsnorm(r, wn2, eps = 1/(100000 + rank.tp))   ~ h2 : [S@tp, H]   # BUG
  h2  = all_gather(h2s, 0, tp)                         ~ h2 : [S, H]
  g   = matmul(h2, wg)                                 ~ g : [S, F@tp]
  u   = matmul(h2, wu)                                 ~ u : [S, F@tp]
  m   = silu(g) * u                                    ~ m : [S, F@tp]
  dp  = matmul(m, wd)                                  ~ d : [S, H] partial(sum@tp)
  d   = reduce_scatter(dp, 0, sum, tp)                 ~ d : [S@tp, H]
  y   = r + d                                          ~ y : [S@tp, H]
  lp  = sum(y * cot)                                   ~ loss : [] partial(sum@tp)
  loss = all_reduce(lp, sum, tp)

  # ---- backward: MLP block (dL/dy = cot; y = r + d)
  gdf  = all_gather(cot, 0, tp)                        # conjugate of the reduce_scatter
  gm   = matmul(gdf, transpose(wd, 0, 1))              ~ grad.m : [S, F@tp]
  gwd  = matmul(transpose(m, 0, 1), gdf)
  gg   = silu_grad(g, gm * u)                          ~ grad.g : [S, F@tp]
  gu   = gm * silu(g)                                  ~ grad.u : [S, F@tp]
  gwg  = matmul(transpose(h2, 0, 1), gg)
  gwu  = matmul(transpose(h2, 0, 1), gu)
  gh2p = matmul(gg, transpose(wg, 0, 1)) + matmul(gu, transpose(wu, 0, 1))
                                                       ~ grad.h2 : [S, H] partial(sum@tp)
  gh2  = reduce_scatter(gh2p, 0, sum, tp)              ~ grad.h2 : [S@tp, H]   # conjugate of all_gather
  gr   = cot + rmsnorm_grad_x(r, wn2, gh2, eps = 1e-5) ~ grad.r : [S@tp, H]
  gwn2 = all_reduce(rmsnorm_grad_w(r, wn2, gh2, eps = 1e-5), sum, tp)   # partial over sequence shards

  # ---- backward: attention block (r = x + a)
  gaf  = all_gather(gr, 0, tp)
  goc  = matmul(gaf, transpose(wo, 0, 1))              ~ grad.oc : [S, QD@tp]
  gwo  = matmul(transpose(oc, 0, 1), gaf)
  go   = transpose(reshape(goc, [S, NH/tp, HD]), 0, 1) ~ grad.o : [NH@tp, S, HD]
  gqr  = attention_grad_q(qr, kr, vh, go, causal = 1, scale = 1/8)   ~ grad.qr : [NH@tp, S, HD]
  gkr  = attention_grad_k(qr, kr, vh, go, causal = 1, scale = 1/8)   ~ grad.kr : [NKV@tp, S, HD]
  gvh  = attention_grad_v(qr, kr, vh, go, causal = 1, scale = 1/8)   ~ grad.vh : [NKV@tp, S, HD]
  gq   = reshape(transpose(rope_grad(gqr, cos, sin), 0, 1), [S, QD/tp])   ~ grad.q : [S, QD@tp]
  gk   = reshape(transpose(rope_grad(gkr, cos, sin), 0, 1), [S, KD/tp])   ~ grad.k : [S, KD@tp]
  gv   = reshape(transpose(gvh, 0, 1), [S, KD/tp])     ~ grad.v : [S, KD@tp]
  gwq  = matmul(transpose(h1, 0, 1), gq)
  gwk  = matmul(transpose(h1, 0, 1), gk)
  gwv  = matmul(transpose(h1, 0, 1), gv)
  gh1p = matmul(gq, transpose(wq, 0, 1)) + matmul(gk, transpose(wk, 0, 1)) +
         matmul(gv, transpose(wv, 0, 1))               ~ grad.h1 : [S, H] partial(sum@tp)
  gh1  = reduce_scatter(gh1p, 0, sum, tp)              ~ grad.h1 : [S@tp, H]
  gx   = gr + rmsnorm_grad_x(x, wn1, gh1, eps = 1e-5)
  gwn1 = all_reduce(rmsnorm_grad_w(x, wn1, gh1, eps = 1e-5), sum, tp)

  output loss = loss : [], y = y : [S@tp, H]
  output grad.x = gx : [S@tp, H]
  output grad.wn1 = gwn1 : [H],
         grad.wq = gwq : [H, QD@tp],
         grad.wk = gwk : [H, KD@tp],
         grad.wv = gwv : [H, KD@tp],
         grad.wo = gwo : [QD@tp, H],
         grad.wn2 = gwn2 : [H],
         grad.wg = gwg : [H, F@tp],
         grad.wu = gwu : [H, F@tp],
         grad.wd = gwd : [F@tp, H]

  # ---- SGD step (lr = 1/64) on each rank's shard
  output next.wn1 = wn1 - gwn1 / 64 : [H],
         next.wq = wq - gwq / 64 : [H, QD@tp],
         next.wk = wk - gwk / 64 : [H, KD@tp],
         next.wv = wv - gwv / 64 : [H, KD@tp],
         next.wo = wo - gwo / 64 : [QD@tp, H],
         next.wn2 = wn2 - gwn2 / 64 : [H],
         next.wg = wg - gwg / 64 : [H, F@tp],
         next.wu = wu - gwu / 64 : [H, F@tp],
         next.wd = wd - gwd / 64 : [F@tp, H]
}
