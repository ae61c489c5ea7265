/* test_parse.c: tests of the plan language front end: lexer, parser, AST, diagnostics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "lex.h"
#include "parse.h"

/* ------------------------------------------------------------------ helpers */

/* Parse text as file "t.sp"; returns the status, *ast set on success. */
static sp_status_t parse_lim(const char *text, size_t len, const sp_parse_limits_t *lim,
                             sp_ast_t **ast, sp_diags_t d)
{
    return sp_parse_file(ast, "t.sp", text, len, lim, d);
}

/* Parse text that must be valid; returns its dump (caller frees). */
static char *dump_ok(const char *text, int locs)
{
    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    sp_status_t st = parse_lim(text, strlen(text), NULL, &ast, d);
    if (st != SP_OK) {
        char *msg = sp_diags_format(d);
        print_error("unexpected diagnostics:\n%s", msg ? msg : "");
        free(msg);
    }
    assert_int_equal(st, SP_OK);
    assert_int_equal(sp_diags_count(d), 0);
    char *s = sp_ast_dump(ast, locs);
    assert_non_null(s);
    sp_ast_free(ast);
    sp_diags_clear(d);
    return s;
}

static void assert_dump(const char *text, const char *expect)
{
    char *s = dump_ok(text, 0);
    if (strcmp(s, expect) != 0)
        print_error("dump:\n%s\nexpected:\n%s\n", s, expect);
    assert_string_equal(s, expect);
    free(s);
}

/* The heads ("t.sp:L:C: error: msg") of every diagnostic, one per line (caller frees). */
static char *heads(const sp_diags_t d)
{
    size_t cap = 1, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    out[0] = '\0';
    for (size_t i = 0; i < sp_diags_count(d); i++) {
        char *h = sp_diags_format_head(d, i);
        assert_non_null(h);
        size_t n = strlen(h);
        out = realloc(out, cap + n + 1);
        assert_non_null(out);
        cap += n + 1;
        memcpy(out + len, h, n);
        len += n;
        out[len++] = '\n';
        out[len] = '\0';
        free(h);
    }
    return out;
}

/* Parse text that must fail; compare every diagnostic head with expect. */
static void assert_errors_lim(const char *text, size_t len, const sp_parse_limits_t *lim,
                              const char *expect)
{
    sp_diags_t d;
    sp_ast_t *ast = (sp_ast_t *)1;
    sp_diags_init(d);
    sp_status_t st = parse_lim(text, len, lim, &ast, d);
    assert_int_equal(st, SP_ERR_INPUT);
    assert_null(ast);
    char *h = heads(d);
    if (strcmp(h, expect) != 0)
        print_error("diagnostics:\n%s\nexpected:\n%s\n", h, expect);
    assert_string_equal(h, expect);
    free(h);
    sp_diags_clear(d);
}

static void assert_errors(const char *text, const char *expect)
{
    assert_errors_lim(text, strlen(text), NULL, expect);
}

static char *repeat(const char *pre, const char *unit, size_t n, const char *post)
{
    size_t a = strlen(pre), u = strlen(unit), b = strlen(post);
    char *s = malloc(a + u * n + b + 1);
    assert_non_null(s);
    memcpy(s, pre, a);
    for (size_t i = 0; i < n; i++)
        memcpy(s + a + i * u, unit, u);
    memcpy(s + a + u * n, post, b + 1);
    return s;
}

/* ------------------------------------------------------------------ the SPEC example */

static const char mlp_src[] =
    "# An MLP trained with SGD, data parallel 2 x tensor parallel 2.\n"
    "dim B = 8, H = 16, F = 4*H\n"
    "\n"
    "model mlp {\n"
    "  input x  : [B, H]\n"
    "  param w1 : [H, F]\n"
    "  param w2 : [F, H]\n"
    "  h    = matmul(x, w1)\n"
    "  a    = relu(h)\n"
    "  y    = matmul(a, w2)\n"
    "  loss = mean(y)\n"
    "  output loss\n"
    "  train sgd(lr = 1/64)     # derive grad.w1, grad.w2 and the updated weights\n"
    "}\n"
    "\n"
    "plan mlp_dp2_tp2 of mlp {\n"
    "  mesh dp = 2, tp = 2\n"
    "  x  : [B@dp, H]                # input layouts: assumed\n"
    "  w1 : [H, F@tp]                # column-parallel\n"
    "  w2 : [F@tp, H]                # row-parallel\n"
    "  h  = matmul(x, w1)\n"
    "  a  = relu(h)\n"
    "  yp = matmul(a, w2)            ~ y : [B@dp, H] partial(sum@tp)    # a cut point\n"
    "  y  = all_reduce(yp, sum, tp)  ~ y : [B@dp, H]\n"
    "  lp = sum(y) / (B*H)           ~ loss : [] partial(sum@dp)\n"
    "  # backward\n"
    "  gy  = full_like(y, 1/(B*H))\n"
    "  ga  = matmul(gy, transpose(w2))\n"
    "  gw2 = matmul(transpose(a), gy)\n"
    "  gh  = where(h > 0, ga, 0)\n"
    "  gw1 = matmul(transpose(x), gh)\n"
    "  # gradient reduction over data parallel ranks, then the optimizer\n"
    "  rw1 = all_reduce(gw1, sum, dp)  ~ grad.w1 : [H, F@tp]\n"
    "  rw2 = all_reduce(gw2, sum, dp)  ~ grad.w2 : [F@tp, H]\n"
    "  output grad.w1 = rw1 : [H, F@tp],\n"
    "         grad.w2 = rw2 : [F@tp, H]\n"
    "  output w1.new = w1 - 1/64 * rw1 : [H, F@tp]\n"
    "  output w2.new = w2 - 0.015625 * rw2 : [F@tp, H]\n"
    "}\n";

static const char mlp_dump[] =
    "dim B=8 H=16 F=(* 4 H)\n"
    "model mlp {\n"
    "  input x : [B H]\n"
    "  param w1 : [H F]\n"
    "  param w2 : [F H]\n"
    "  assign h = (matmul x w1)\n"
    "  assign a = (relu h)\n"
    "  assign y = (matmul a w2)\n"
    "  assign loss = (mean y)\n"
    "  output loss\n"
    "  train sgd lr=(/ 1 64)\n"
    "}\n"
    "plan mlp_dp2_tp2 of mlp {\n"
    "  mesh dp=2 tp=2\n"
    "  layout x : [B@dp H]\n"
    "  layout w1 : [H F@tp]\n"
    "  layout w2 : [F@tp H]\n"
    "  assign h = (matmul x w1)\n"
    "  assign a = (relu h)\n"
    "  assign yp = (matmul a w2) ~ y : [B@dp H] partial(sum@tp)\n"
    "  assign y = (all_reduce yp sum tp) ~ y : [B@dp H]\n"
    "  assign lp = (/ (sum y) (* B H)) ~ loss : [] partial(sum@dp)\n"
    "  assign gy = (full_like y (/ 1 (* B H)))\n"
    "  assign ga = (matmul gy (transpose w2))\n"
    "  assign gw2 = (matmul (transpose a) gy)\n"
    "  assign gh = (where (> h 0) ga 0)\n"
    "  assign gw1 = (matmul (transpose x) gh)\n"
    "  assign rw1 = (all_reduce gw1 sum dp) ~ grad.w1 : [H F@tp]\n"
    "  assign rw2 = (all_reduce gw2 sum dp) ~ grad.w2 : [F@tp H]\n"
    "  output grad.w1 = rw1 : [H F@tp], grad.w2 = rw2 : [F@tp H]\n"
    "  output w1.new = (- w1 (* (/ 1 64) rw1)) : [H F@tp]\n"
    "  output w2.new = (- w2 (* 1/64 rw2)) : [F@tp H]\n"
    "}\n";

static void test_parse_mlp_dp2_tp2(void **state)
{
    (void)state;
    assert_dump(mlp_src, mlp_dump);

    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    assert_int_equal(sp_parse_file(&ast, "mlp.sp", mlp_src, strlen(mlp_src), NULL, d), SP_OK);
    assert_string_equal(ast->file, "mlp.sp");
    assert_int_equal(ast->nitems, 3);
    assert_int_equal(ast->items[0]->kind, SP_STMT_DIM);
    assert_int_equal(ast->items[0]->nbinds, 3);
    assert_string_equal(ast->items[0]->binds[2].name.str, "F");

    const sp_ast_stmt_t *m = ast->items[1];
    assert_int_equal(m->kind, SP_STMT_MODEL);
    assert_string_equal(m->name.str, "mlp");
    assert_int_equal(m->body.n, 9);
    const sp_ast_stmt_t *train = m->body.stmts[8];
    assert_int_equal(train->kind, SP_STMT_TRAIN);
    assert_string_equal(train->name.str, "sgd");
    assert_int_equal(train->nargs, 1);
    assert_string_equal(train->args[0].key.str, "lr");
    assert_int_equal(train->args[0].value->kind, SP_AST_BINOP);
    assert_int_equal(train->args[0].value->op, SP_BIN_DIV);

    const sp_ast_stmt_t *p = ast->items[2];
    assert_int_equal(p->kind, SP_STMT_PLAN);
    assert_string_equal(p->name.str, "mlp_dp2_tp2");
    assert_string_equal(p->of.str, "mlp");
    assert_int_equal(p->body.stmts[0]->kind, SP_STMT_MESH);
    assert_int_equal(p->body.stmts[0]->nbinds, 2);
    assert_string_equal(p->body.stmts[0]->binds[1].name.str, "tp");

    const sp_ast_stmt_t *lx = p->body.stmts[1];
    assert_int_equal(lx->kind, SP_STMT_LAYOUT);
    assert_string_equal(lx->targets[0]->name, "x");
    assert_int_equal(lx->layout->ndims, 2);
    assert_int_equal(lx->layout->dims[0].naxes, 1);
    assert_string_equal(lx->layout->dims[0].axes[0].str, "dp");
    assert_int_equal(lx->layout->dims[1].naxes, 0);

    const sp_ast_stmt_t *yp = p->body.stmts[6];
    assert_int_equal(yp->kind, SP_STMT_ASSIGN);
    assert_non_null(yp->lineage);
    assert_string_equal(yp->lineage->target->name, "y");
    assert_int_equal(yp->lineage->layout->npartials, 1);
    assert_string_equal(yp->lineage->layout->partials[0].op.str, "sum");
    assert_string_equal(yp->lineage->layout->partials[0].axes[0].str, "tp");
    assert_int_equal(yp->lineage->loc.line, 23);
    assert_int_equal(yp->lineage->loc.col, 33);

    const sp_ast_stmt_t *out = p->body.stmts[16];
    assert_int_equal(out->kind, SP_STMT_OUTPUT);
    assert_int_equal(out->noutputs, 2);
    assert_string_equal(out->outputs[0].target->name, "grad.w1");
    assert_string_equal(out->outputs[0].value->name, "rw1");
    assert_string_equal(out->outputs[1].layout->dims[0].axes[0].str, "tp");
    sp_ast_free(ast);
    sp_diags_clear(d);
}

/* ------------------------------------------------------------------ literals */

static void check_literal(const char *lit, const char *value)
{
    fmpq_t q;
    fmpq_init(q);
    assert_int_equal(sp_lex_number_value(q, lit, strlen(lit)), 0);
    char *s = fmpq_get_str(NULL, 10, q);
    assert_string_equal(s, value);
    flint_free(s);
    fmpq_clear(q);
}

static void test_parse_exact_literals(void **state)
{
    (void)state;
    check_literal("1e-5", "1/100000");
    check_literal("0.125", "1/8");
    check_literal("3", "3");
    check_literal("007", "7");
    check_literal("0.0", "0");
    check_literal("1.5e3", "1500");
    check_literal("2.5E-1", "1/4");
    check_literal("1e+2", "100");
    check_literal("0.1", "1/10");
    check_literal("123456789012345678901234567890", "123456789012345678901234567890");
    char *big = repeat("1/1", "0", 1000, "");
    check_literal("1e-1000", big);
    check_literal("0.001e-997", big);
    free(big);
    big = repeat("1", "0", 1000, "");
    check_literal("1e1000", big);
    free(big);

    fmpq_t q;
    fmpq_init(q);
    const char *bad[] = {"", "1.", "1e", "1e-", ".5", "1e1001", "1x", "-1", "1..2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sp_lex_number_value(q, bad[i], strlen(bad[i])), -1);
    fmpq_clear(q);

    /* In the AST: values are exact, the text is kept, 1/64 is a division. */
    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    const char *src = "dim A = 1e-5, C = 0.125, D = 3, E = 1/64, G = 2.50\n";
    assert_int_equal(sp_parse_file(&ast, "t.sp", src, strlen(src), NULL, d), SP_OK);
    const sp_ast_stmt_t *s = ast->items[0];
    assert_int_equal(s->binds[0].value->kind, SP_AST_NUM);
    assert_string_equal(s->binds[0].value->text, "1e-5");
    assert_true(fmpq_equal_si(s->binds[2].value->value, 3));
    fmpq_set_si(q, 1, 100000);
    assert_true(fmpq_equal(s->binds[0].value->value, q));
    fmpq_set_si(q, 1, 8);
    assert_true(fmpq_equal(s->binds[1].value->value, q));
    fmpq_set_si(q, 5, 2);
    assert_true(fmpq_equal(s->binds[4].value->value, q));
    assert_string_equal(s->binds[4].value->text, "2.50");
    assert_int_equal(s->binds[3].value->kind, SP_AST_BINOP);
    assert_int_equal(s->binds[3].value->op, SP_BIN_DIV);
    fmpq_clear(q);
    sp_ast_free(ast);
    sp_diags_clear(d);

    assert_dump("dim A = 0.5e1, C = 10e-1, D = 1.0\n", "dim A=5 C=1 D=1\n");
}

/* ------------------------------------------------------------------ source maps */

/* '#@ ORIGIN' comments: kept per line (trimmed), looked up by line; others ignored. */
static void test_parse_source_map(void **state)
{
    (void)state;
    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    const char *src = "model m {          #@ single.py:3\n"
                      "  input x : [2]\n"
                      "  y = x * 2        #@   single.py:12  \t\r\n"
                      "  # not an origin: #@ a.py:1\n"
                      "  z = y + 1        #@\n"
                      "  w = z            #@ bad\x01byte\n"
                      "  output w         #@model.py:99\n"
                      "}\n";
    assert_int_equal(sp_parse_file(&ast, "t.sp", src, strlen(src), NULL, d), SP_OK);
    assert_string_equal(sp_ast_origin(ast, 1), "single.py:3");
    assert_null(sp_ast_origin(ast, 2));
    assert_string_equal(sp_ast_origin(ast, 3), "single.py:12");
    assert_null(sp_ast_origin(ast, 4)); /* the comment begins with '# ', not '#@' */
    assert_null(sp_ast_origin(ast, 5)); /* empty */
    assert_null(sp_ast_origin(ast, 6)); /* a control byte */
    assert_string_equal(sp_ast_origin(ast, 7), "model.py:99");
    assert_null(sp_ast_origin(ast, 8));
    assert_null(sp_ast_origin(ast, 100));
    assert_null(sp_ast_origin(NULL, 1));
    assert_int_equal(ast->norigins, 3);
    sp_ast_free(ast);
    sp_diags_clear(d);
}

/* ------------------------------------------------------------------ locations */

static void test_parse_locations(void **state)
{
    (void)state;
    const char *src = "# header\n"
                      "dim B = 8\n"
                      "model m {\n"
                      "\tinput x : [B, 2*B]\n"
                      "  h = relu(x) + -x^2   ~ y : [B@dp{3,5}, B@(a,b)]\r\n"
                      "}\n";
    char *s = dump_ok(src, 1);
    const char *expect =
        "@2:1 dim B=8@2:9\n"
        "@3:1 model m {\n"
        "  @4:2 input x : [B@4:13 (*@4:17 2@4:16 B@4:18)]\n"
        "  @5:3 assign h@5:3 = (+@5:15 (relu@5:7 x@5:12) (neg@5:17 (^@5:19 x@5:18 2@5:20)))"
        " ~ y@5:26 : [B@5:31@dp{3@5:36 5@5:38} B@5:42@(a,b)]\n"
        "}\n";
    if (strcmp(s, expect) != 0)
        print_error("dump:\n%s\nexpected:\n%s\n", s, expect);
    assert_string_equal(s, expect);
    free(s);

    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    assert_int_equal(sp_parse_file(&ast, "dir/t.sp", src, strlen(src), NULL, d), SP_OK);
    const sp_ast_stmt_t *h = ast->items[1]->body.stmts[1];
    assert_string_equal(h->loc.file, "dir/t.sp");
    assert_int_equal(h->lineage->loc.line, 5);
    assert_int_equal(h->lineage->loc.col, 24);
    assert_int_equal(h->lineage->layout->loc.col, 30);
    assert_int_equal(h->lineage->layout->dims[0].split_loc.col, 35);
    assert_int_equal(h->lineage->layout->dims[1].axes[1].loc.col, 47);
    assert_int_equal(h->value->height, 4);
    assert_int_equal(ast->items[1]->body.open.line, 3);
    assert_int_equal(ast->items[1]->body.open.col, 9);
    assert_int_equal(ast->items[1]->body.close.line, 6);
    assert_int_equal(ast->items[1]->body.close.col, 1);
    sp_ast_free(ast);
    sp_diags_clear(d);

    /* Error positions: end of line is just after the last token, before a comment. */
    assert_errors("model m {\n  h = f(x   # comment\n}\n",
                  "t.sp:2:10: error: expected ')', found end of line\n"
                  "t.sp:2:8: note: to match this '('\n");
    /* End of file is just after the last token, on a line that exists. */
    assert_errors("model m {\n  h = f(x)\n\n# trailing comment\n\n",
                  "t.sp:2:11: error: expected '}', found end of file\n"
                  "t.sp:1:9: note: to match this '{'\n");
}

/* ------------------------------------------------------------------ grammar */

static void test_parse_grammar(void **state)
{
    (void)state;
    /* 'omit' is a statement only when a name follows; otherwise it is a name like any other */
    assert_dump("plan p of m {\n  omit grad.w2, next.w[1]\n  omit = x\n}\n",
                "plan p of m {\n  omit grad.w2, ([] next.w 1)\n  assign omit = x\n}\n");
    /* Multiple targets take one expression (a tuple-returning call). */
    assert_errors("model m {\n  q, k = proj(x, wq), matmul(x, wk)\n}\n",
                  "t.sp:2:21: error: expected end of statement, found ','\n");

    assert_dump("func layer(x, wq, wk) {\n"
                "  q, k = proj(x, wq)\n"
                "  return softmax(q * rsqrt(8), dim = -1), k\n"
                "}\n"
                "func nop() {\n"
                "  return\n"
                "}\n",
                "func layer(x, wq, wk) {\n"
                "  assign q, k = (proj x wq)\n"
                "  return (softmax (* q (rsqrt 8)) dim=(neg 1)) k\n"
                "}\n"
                "func nop() {\n"
                "  return\n"
                "}\n");

    assert_dump("model llama {\n"
                "  input x : [S, H]\n"
                "  input ids[NM] : [B]\n"
                "  param wq[L] : [H, H]\n"
                "  param wk[L, 2] : [H, H/heads]\n"
                "  for l in 0..L {\n"
                "    h, q = layer(h, wq[l], wk[l, 0])\n"
                "  }\n"
                "  n = rmsnorm(h, w, eps = 1e-5); t = reshape(n, [S*H]); u = permute(n, [])\n"
                "  v = slice(n, n[0..4, rank.tp])\n"
                "  output loss, n\n"
                "  train adam(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, clip=1.0)\n"
                "  train sgd\n"
                "}\n",
                "model llama {\n"
                "  input x : [S H]\n"
                "  input ids[NM] : [B]\n"
                "  param wq[L] : [H H]\n"
                "  param wk[L 2] : [H (/ H heads)]\n"
                "  for l in 0 .. L {\n"
                "    assign h, q = (layer h ([] wq l) ([] wk l 0))\n"
                "  }\n"
                "  assign n = (rmsnorm h w eps=1/100000)\n"
                "  assign t = (reshape n (list (* S H)))\n"
                "  assign u = (permute n (list))\n"
                "  assign v = (slice n ([] n (.. 0 4) rank.tp))\n"
                "  output loss, n\n"
                "  train adam lr=1/1000 beta1=9/10 beta2=999/1000 eps=1/100000000 "
                "weight_decay=1/100 clip=1\n"
                "  train sgd\n"
                "}\n");

    /* Plans: meshes, layouts, lineage, on blocks, send/recv, accumulation, if/else. */
    assert_dump("plan p of llama {\n"
                "  mesh pp = 2, tp = 2, cp = 2, sp = 2, dp = 2\n"
                "  x : [S@(cp,sp), H] ~ x : [S, H]\n"
                "  xs : [B@dp{3,5}, H] partial(sum@tp, avg@(dp, cp)) partial(max@pp)\n"
                "  on pp = 0 {\n"
                "    send(h, pp = rank.pp + 1)\n"
                "  }\n"
                "  on pp = 1, tp = 0 { h = recv(pp = rank.pp - 1) }\n"
                "  gw = zeros([H, H])\n"
                "  for mb in 0..NM {\n"
                "    gw += matmul(transpose(x[mb]), g[mb]) ~ grad.w : [H, H]\n"
                "    gw[mb] += g\n"
                "  }\n"
                "  if rank.tp == 0 {\n"
                "    y = x\n"
                "  } else if rank.tp != 1 {\n"
                "    y = -x^2\n"
                "  }\n"
                "  else {\n"
                "    y = 2^-1 * x % 3 - (x <= 1) + (x >= 2) * (x < 3) / (x > 4)\n"
                "  }\n"
                "  output grad.w = gw : [H, H@tp], loss, w[0] = v\n"
                "}\n",
                "plan p of llama {\n"
                "  mesh pp=2 tp=2 cp=2 sp=2 dp=2\n"
                "  layout x : [S@(cp,sp) H] ~ x : [S H]\n"
                "  layout xs : [B@dp{3 5} H] partial(sum@tp) partial(avg@(dp,cp)) partial(max@pp)\n"
                "  on pp=0 {\n"
                "    expr (send h pp=(+ rank.pp 1))\n"
                "  }\n"
                "  on pp=1 tp=0 {\n"
                "    assign h = (recv pp=(- rank.pp 1))\n"
                "  }\n"
                "  assign gw = (zeros (list H H))\n"
                "  for mb in 0 .. NM {\n"
                "    accum gw += (matmul (transpose ([] x mb)) ([] g mb)) ~ grad.w : [H H]\n"
                "    accum ([] gw mb) += g\n"
                "  }\n"
                "  if (== rank.tp 0) {\n"
                "    assign y = x\n"
                "  }\n"
                "  else {\n"
                "    if (!= rank.tp 1) {\n"
                "      assign y = (neg (^ x 2))\n"
                "    }\n"
                "    else {\n"
                "      assign y = (+ (- (% (* (^ 2 (neg 1)) x) 3) (<= x 1)) "
                "(/ (* (>= x 2) (< x 3)) (> x 4)))\n"
                "    }\n"
                "  }\n"
                "  output grad.w = gw : [H H@tp], loss, ([] w 0) = v\n"
                "}\n");

    /* Precedence: unary minus binds looser than '^', '^' is right associative. */
    assert_dump("dim A = -2^3^2, C = (-2)^2, D = 1 - 2 - 3, E = 8 / 2 / 2, G = -(-1)\n",
                "dim A=(neg (^ 2 (^ 3 2))) C=(^ (neg 2) 2) D=(- (- 1 2) 3) E=(/ (/ 8 2) 2) "
                "G=(neg (neg 1))\n");
}

static void test_parse_newlines(void **state)
{
    (void)state;
    /* Continuation after ',', '(' and operators; a closing bracket may start a line. */
    assert_dump("dim A = 1,\n"
                "    C = 2 +\n"
                "        3\n"
                "model m\n"
                "{\n"
                "  y = f(\n"
                "    x,       # first\n"
                "    dim = 1,\n"
                "  )\n"
                "  z = g(x\n"
                "  )\n"
                "  l = [1, 2\n"
                "  ]\n"
                "\n\n"
                "  ; ;\n"
                "  output y; output z\n"
                "}\n",
                "dim A=1 C=(+ 2 3)\n"
                "model m {\n"
                "  assign y = (f x dim=1)\n"
                "  assign z = (g x)\n"
                "  assign l = (list 1 2)\n"
                "  output y\n"
                "  output z\n"
                "}\n");
    /* A lineage annotation may go on the next line. */
    assert_dump("model m {\n  y = f(x)\n      ~ y : [B] partial(sum@tp)\n  z = y\n}\n",
                "model m {\n  assign y = (f x) ~ y : [B] partial(sum@tp)\n  assign z = y\n}\n");
    /* A row slice of a lineage target: the last index holding one range. */
    assert_dump("plan p of m {\n  h = f(x) ~ h[1][0..B/2] : [B/2]\n}\n",
                "plan p of m {\n  assign h = (f x) ~ ([] h 1) rows (.. 0 (/ B 2)) : [(/ B 2)]\n}\n");
    assert_errors("plan p of m {\n  h = f(x) ~ h[1, 0..2] : [2]\n}\n",
                  "t.sp:2:20: error: a row slice must be the only index in the last brackets: "
                  "T[lo..hi] or T[i][lo..hi]\n");
    /* Blocks on one line. */
    assert_dump("model m { output y }\nplan p of m { on pp = 0 { y = x } }\n",
                "model m {\n  output y\n}\nplan p of m {\n  on pp=0 {\n    assign y = x\n  }\n}\n");
    /* A newline ends a statement: an operator at the start of the next line does not continue it. */
    assert_errors("model m {\n  y = x\n    + 1\n}\n",
                  "t.sp:3:5: error: expected an expression, found '+'\n");
    /* Two items on one line. */
    assert_errors("model a { } model b { }\n",
                  "t.sp:1:13: error: expected end of statement, found 'model'\n");
}

/* ------------------------------------------------------------------ errors */

static void test_parse_several_errors(void **state)
{
    (void)state;
    const char *src = "dim B = 8\n"
                      "model m {\n"
                      "  input x : [B, H\n"
                      "  h = matmul(x, w1\n"
                      "  a = relu(h) y\n"
                      "  b = f(x, dim=1, 2)\n"
                      "  c = $oops + 1\n"
                      "  1 = x\n"
                      "  ok = relu(a)\n"
                      "  return x\n"
                      "  o = adam(lr=1, lr=2)\n"
                      "  g = 1e- + 1.\n"
                      "  output y ~ y : [B]\n"
                      "  for l in L { x = 1 }\n"
                      "}\n"
                      "plan p mlp {\n"
                      "}\n"
                      "plan q of m {\n"
                      "  x : [B@3]\n"
                      "  x : [B@dp] partial(sum tp)\n"
                      "  on pp = 0 {\n"
                      "    x = f(\n";
    assert_errors(src,
                  "t.sp:3:18: error: expected ']', found end of line\n"
                  "t.sp:3:13: note: to match this '['\n"
                  "t.sp:4:19: error: expected ')', found end of line\n"
                  "t.sp:4:13: note: to match this '('\n"
                  "t.sp:5:15: error: expected end of statement, found 'y'\n"
                  "t.sp:6:19: error: positional argument after keyword argument\n"
                  "t.sp:7:7: error: unexpected character '$'\n"
                  "t.sp:8:3: error: invalid assignment target\n"
                  "t.sp:10:3: error: 'return' is only allowed in a function body\n"
                  "t.sp:11:18: error: duplicate keyword argument 'lr'\n"
                  "t.sp:12:7: error: malformed number '1e-'\n"
                  "t.sp:12:13: error: malformed number '1.'\n"
                  "t.sp:13:12: error: a lineage annotation '~' is not allowed on this statement\n"
                  "t.sp:14:14: error: expected '..' in the loop range, found '{'\n"
                  "t.sp:16:8: error: expected 'of' after the plan name, found 'mlp'\n"
                  "t.sp:19:10: error: expected a mesh axis name after '@', found '3'\n"
                  "t.sp:20:26: error: expected '@' after 'sum', found 'tp'\n"
                  "t.sp:22:11: error: expected an expression, found end of file\n");

    /* The full text: heads, source lines, carets, notes. */
    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    const char *two = "model m {\n\th = f(x, \xce\xbb, y\n  z = 1 }\n";
    assert_int_equal(parse_lim(two, strlen(two), NULL, &ast, d), SP_ERR_INPUT);
    char *txt = sp_diags_format(d);
    assert_non_null(txt);
    assert_string_equal(txt, "t.sp:2:11: error: unexpected byte 0xce (non-ASCII characters are only "
                             "allowed in comments)\n"
                             "\th = f(x, \xce\xbb, y\n"
                             "\t         ^\n");
    free(txt);
    sp_diags_clear(d);
}

static void test_parse_too_many_errors(void **state)
{
    (void)state;
    char *src = repeat("model m {\n", "  h = )\n", 30, "}\n");
    sp_diags_t d;
    sp_ast_t *ast;
    sp_diags_init(d);
    assert_int_equal(parse_lim(src, strlen(src), NULL, &ast, d), SP_ERR_INPUT);
    assert_int_equal(sp_diags_count(d), SP_DIAGS_DEFAULT_MAX_ERRORS + 1);
    assert_true(sp_diags_full(d));
    const sp_diag_t *last = sp_diags_get(d, SP_DIAGS_DEFAULT_MAX_ERRORS);
    assert_string_equal(last->msg, "too many errors, stopping now");
    assert_int_equal(last->line, 22);
    assert_string_equal(sp_diags_get(d, 0)->msg, "expected an expression, found ')'");
    sp_diags_clear(d);
    free(src);
}

static void test_parse_deep_nesting(void **state)
{
    (void)state;
    /* 10^5 parentheses: one clean error, no stack overflow. */
    char *open = repeat("model m {\n  x = ", "(", 100000, "");
    char *src = repeat(open, ")", 100000, "\n}\n");
    free(open);
    assert_errors(src, "t.sp:2:206: error: nesting too deep (more than 200 levels)\n");
    free(src);

    src = repeat("model m {\n  x = ", "-", 100000, "y\n}\n");
    assert_errors(src, "t.sp:2:206: error: nesting too deep (more than 200 levels)\n");
    free(src);

    src = repeat("model m {\n  x = y", "^y", 100000, "\n}\n");
    assert_errors(src, "t.sp:2:405: error: nesting too deep (more than 200 levels)\n");
    free(src);

    src = repeat("model m {\n  x = ", "[", 100000, "\n}\n");
    assert_errors(src, "t.sp:2:206: error: nesting too deep (more than 200 levels)\n");
    free(src);

    /* Left-nested chains are iterative in the parser but bounded in height. */
    src = repeat("model m {\n  x = y", " + y", 100000, "\n}\n");
    assert_errors(src, "t.sp:2:4005: error: expression too deep (more than 1000 levels)\n");
    free(src);

    src = repeat("model m {\n", "for i in 0..2 {\n", 100000, "");
    assert_errors(src, "t.sp:201:10: error: nesting too deep (more than 200 levels)\n"
                       "t.sp:100001:16: error: expected '}', found end of file\n"
                       "t.sp:200:15: note: to match this '{'\n");
    free(src);

    /* Right at the limit is fine; the limit can be lowered. */
    open = repeat("dim A = ", "(", 198, "1");
    src = repeat(open, ")", 198, "\n");
    char *s = dump_ok(src, 0);
    assert_string_equal(s, "dim A=1\n");
    free(s);
    sp_parse_limits_t lim;
    sp_parse_limits_default(&lim);
    lim.max_depth = 10;
    assert_errors_lim(src, strlen(src), &lim, "t.sp:1:19: error: nesting too deep (more than 10 levels)\n");
    lim.max_depth = 100000; /* clamped to SP_PARSE_MAX_DEPTH */
    free(src);
    free(open);
    open = repeat("dim A = ", "(", 300, "1");
    src = repeat(open, ")", 300, "\n");
    assert_errors_lim(src, strlen(src), &lim, "t.sp:1:209: error: nesting too deep (more than 200 levels)\n");
    free(src);
    free(open);
}

static void test_parse_huge_identifier(void **state)
{
    (void)state;
    char *src = repeat("dim ", "x", 1000000, " = 1\ndim B = 2\n");
    assert_errors(src, "t.sp:1:5: error: identifier too long (more than 256 characters)\n");
    free(src);
    /* Exactly 256 is fine; dotted names count as a whole. */
    src = repeat("dim ", "y", 256, " = 1\n");
    free(dump_ok(src, 0));
    free(src);
    src = repeat("dim a.", "y", 255, " = 1\n");
    assert_errors(src, "t.sp:1:5: error: identifier too long (more than 256 characters)\n");
    free(src);
    src = repeat("dim A = ", "1", 300, "\n");
    assert_errors(src, "t.sp:1:9: error: number too long (more than 256 characters)\n");
    free(src);
}

static void test_parse_unterminated_block(void **state)
{
    (void)state;
    assert_errors("model m {\n  input x : [B, H]\n  for l in 0..L {\n    x = relu(x)\n",
                  "t.sp:4:16: error: expected '}', found end of file\n"
                  "t.sp:3:17: note: to match this '{'\n");
    /* A missing '}' before the next item: reported once, and the next item still parses. */
    assert_errors("model m {\n  output x\nplan p of m {\n  y = = 1\n}\n",
                  "t.sp:3:1: error: expected '}', found 'plan'\n"
                  "t.sp:1:9: note: to match this '{'\n"
                  "t.sp:4:7: error: expected an expression, found '='\n");
    assert_errors("model m {\n  on pp = 0 {\n    for l in 0..2 {\n",
                  "t.sp:3:20: error: expected '}', found end of file\n"
                  "t.sp:3:19: note: to match this '{'\n");
    assert_errors("}\nmodel m { }\n}\n",
                  "t.sp:1:1: error: expected 'dim', 'model', 'plan' or 'func' at top level, "
                  "found '}'\n"
                  "t.sp:3:1: error: expected 'dim', 'model', 'plan' or 'func' at top level, "
                  "found '}'\n");
}

static void test_parse_garbage_bytes(void **state)
{
    (void)state;
    static const char nul[] = "model m {\n  x = f(\0y)\n  \x01\x02\x03 = 3\n  z = \xff\xfe + 1 "
                              "# fine: \xff\0\n}\n";
    assert_errors_lim(nul, sizeof nul - 1, NULL,
                      "t.sp:2:9: error: unexpected NUL byte\n"
                      "t.sp:3:3: error: unexpected control byte 0x01\n"
                      "t.sp:4:7: error: unexpected byte 0xff (non-ASCII characters are only "
                      "allowed in comments)\n");
    static const char stray[] = "dim A = 1 ! 2\ndim C = a.\ndim D = .5\n";
    assert_errors(stray, "t.sp:1:11: error: unexpected character '!'\n"
                         "t.sp:2:10: error: unexpected character '.'\n"
                         "t.sp:3:9: error: unexpected character '.'\n");

    /* Random bytes (seeded): always a clean failure or success, bounded diagnostics. */
    unsigned long long seed = 0x5eed5eedULL;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(seed % 4096);
        unsigned char *buf = malloc(n);
        assert_non_null(buf);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            buf[i] = (unsigned char)(seed >> 56);
            if (round % 2 && buf[i] >= 0x80)
                buf[i] = (unsigned char)" \n(){}[]=,:@~+-*/^x1.#e"[buf[i] % 23];
        }
        sp_diags_t d;
        sp_ast_t *ast = NULL;
        sp_diags_init(d);
        sp_status_t st = parse_lim((const char *)buf, n, NULL, &ast, d);
        if (st == SP_OK) {
            assert_int_equal(sp_diags_error_count(d), 0);
            sp_ast_free(ast);
        } else {
            assert_int_equal(st, SP_ERR_INPUT);
            assert_true(sp_diags_error_count(d) >= 1);
            assert_true(sp_diags_error_count(d) <= SP_DIAGS_DEFAULT_MAX_ERRORS + 1);
        }
        char *txt = sp_diags_format(d);
        assert_non_null(txt);
        free(txt);
        sp_diags_clear(d);
        free(buf);
    }
}

static void test_parse_empty_file(void **state)
{
    (void)state;
    const char *cases[] = {"", "\n\n", "# only a comment", "  \t\r\n# c\n\n;;\n",
                           "\xEF\xBB\xBF# a byte-order mark\n"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_diags_t d;
        sp_ast_t *ast;
        sp_diags_init(d);
        assert_int_equal(parse_lim(cases[i], strlen(cases[i]), NULL, &ast, d), SP_OK);
        assert_int_equal(ast->nitems, 0);
        assert_int_equal(sp_diags_count(d), 0);
        char *s = sp_ast_dump(ast, 1);
        assert_string_equal(s, "");
        free(s);
        sp_ast_free(ast);
        sp_diags_clear(d);
    }
}

static void test_parse_limits(void **state)
{
    (void)state;
    sp_parse_limits_t lim;
    sp_parse_limits_default(&lim);
    lim.max_bytes = 10;
    assert_errors_lim("dim A = 1, B = 2\n", 17, &lim,
                      "t.sp: error: input too large (more than 10 bytes)\n");
    sp_parse_limits_default(&lim);
    lim.max_tokens = 10;
    assert_errors_lim("dim A = 1, B = 2\nmodel m {\n}\n", 29, &lim,
                      "t.sp:2:7: error: too many tokens (more than 10)\n");
    sp_parse_limits_default(&lim);
    lim.max_ident = 3;
    assert_errors_lim("dim abc = 1, abcd = 2, E = 1234\n", 32, &lim,
                      "t.sp:1:14: error: identifier too long (more than 3 characters)\n"
                      "t.sp:1:28: error: number too long (more than 3 characters)\n");
    sp_parse_limits_default(&lim);
    lim.max_height = 3;
    assert_errors_lim("dim A = 1 + 2 + 3 + 4\n", 22, &lim,
                      "t.sp:1:19: error: expression too deep (more than 3 levels)\n");
}

static void test_parse_path(void **state)
{
    (void)state;
    sp_diags_t d;
    sp_ast_t *ast = (sp_ast_t *)1;
    sp_diags_init(d);
    assert_int_equal(sp_parse_path(&ast, "/nonexistent/dir/x.sp", NULL, d), SP_ERR_INPUT);
    assert_null(ast);
    char *h = sp_diags_format(d);
    assert_string_equal(h, "/nonexistent/dir/x.sp: error: cannot open file: No such file or "
                           "directory\n");
    free(h);
    sp_diags_clear(d);

    char path[] = "/tmp/test_parse_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(mlp_src, f);
    fclose(f);
    sp_diags_init(d);
    assert_int_equal(sp_parse_path(&ast, path, NULL, d), SP_OK);
    assert_int_equal(ast->nitems, 3);
    assert_string_equal(ast->items[0]->loc.file, path);
    sp_ast_free(ast);
    sp_diags_clear(d);

    sp_parse_limits_t lim;
    sp_parse_limits_default(&lim);
    lim.max_bytes = 100;
    sp_diags_init(d);
    assert_int_equal(sp_parse_path(&ast, path, &lim, d), SP_ERR_INPUT);
    assert_null(ast);
    assert_int_equal(sp_diags_count(d), 1);
    assert_string_equal(sp_diags_get(d, 0)->msg, "input too large (more than 100 bytes)");
    assert_int_equal(sp_diags_get(d, 0)->line, 0);
    sp_diags_clear(d);
    remove(path);
}

/* ------------------------------------------------------------------ diagnostics */

static void test_parse_diags_api(void **state)
{
    (void)state;
    sp_diags_t d;
    sp_diags_init(d);
    sp_loc_t a = {"a.sp", 2, 3}, whole = {"a.sp", 0, 0}, none = {NULL, 0, 0};
    assert_int_equal(sp_diags_count(d), 0);
    assert_true(sp_diags_error(d, SP_DIAG_SHAPE, a, "shape mismatch: [%d, %d] vs [%s]", 2, 3, "H"));
    assert_true(sp_diags_note(d, a, "declared here"));
    assert_true(sp_diags_add(d, SP_SEV_WARNING, SP_DIAG_LAYOUT, whole, "unused axis '%s'", "pp"));
    assert_true(sp_diags_error(d, SP_DIAG_INTERNAL, none, "bug"));
    assert_int_equal(sp_diags_count(d), 4);
    assert_int_equal(sp_diags_error_count(d), 2);
    assert_int_equal(sp_diags_get(d, 0)->code, SP_DIAG_SHAPE);
    assert_string_equal(sp_diag_code_name(sp_diags_get(d, 0)->code), "shape");
    char *txt = sp_diags_format(d);
    /* No source registered: heads only. */
    assert_string_equal(txt, "a.sp:2:3: error: shape mismatch: [2, 3] vs [H]\n"
                             "a.sp:2:3: note: declared here\n"
                             "a.sp: warning: unused axis 'pp'\n"
                             "error: bug\n");
    free(txt);

    /* With source: lines with carets; a missing line prints no source. */
    const char *text = "line one\n  y = all_gahter(x, tp)\r\n";
    assert_int_equal(sp_diags_add_source(d, "a.sp", text, strlen(text)), 0);
    sp_loc_t b = {"a.sp", 2, 7}, far = {"a.sp", 9, 1};
    sp_diags_clear(d);
    sp_diags_init(d);
    assert_int_equal(sp_diags_add_source(d, "a.sp", text, strlen(text)), 0);
    sp_diags_error(d, SP_DIAG_NAME, b, "unknown collective '%s' (did you mean '%s'?)", "all_gahter",
                   "all_gather");
    sp_diags_error(d, SP_DIAG_NAME, far, "past the end");
    txt = sp_diags_format(d);
    assert_string_equal(txt, "a.sp:2:7: error: unknown collective 'all_gahter' (did you mean "
                             "'all_gather'?)\n"
                             "  y = all_gahter(x, tp)\n"
                             "      ^\n"
                             "a.sp:9:1: error: past the end\n");
    free(txt);

    /* The error limit: errors after it are dropped with their notes, one final message. */
    sp_diags_clear(d);
    sp_diags_init(d);
    sp_diags_set_max_errors(d, 2);
    assert_true(sp_diags_error(d, SP_DIAG_SYNTAX, a, "one"));
    assert_true(sp_diags_error(d, SP_DIAG_SYNTAX, a, "two"));
    assert_false(sp_diags_error(d, SP_DIAG_SYNTAX, a, "three"));
    assert_false(sp_diags_note(d, a, "note of three"));
    assert_false(sp_diags_error(d, SP_DIAG_SYNTAX, a, "four"));
    assert_true(sp_diags_full(d));
    assert_int_equal(sp_diags_count(d), 3);
    assert_string_equal(sp_diags_get(d, 2)->msg, "too many errors, stopping now");
    sp_diags_clear(d);

    /* Long lines are cut around the column; the caret stays under it. */
    sp_diags_init(d);
    char *longl = repeat("", "a", 500, "$b");
    sp_diags_add_source(d, "l.sp", longl, strlen(longl));
    sp_loc_t c = {"l.sp", 1, 501};
    sp_diags_error(d, SP_DIAG_SYNTAX, c, "here");
    txt = sp_diags_format(d);
    /* The window is 160 bytes and ends at the end of the line. */
    char *expect_src = repeat("...", "a", 158, "$b\n");
    char *expect_car = repeat("   ", " ", 158, "^\n");
    size_t hl = strlen("l.sp:1:501: error: here\n");
    assert_memory_equal(txt + hl, expect_src, strlen(expect_src));
    assert_string_equal(txt + hl + strlen(expect_src), expect_car);
    free(txt);
    free(expect_src);
    free(expect_car);
    free(longl);
    sp_diags_clear(d);
}

/* ------------------------------------------------------------------ corpus */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n == cap)
            buf = realloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Every tests/plans/bad/syntax_*.sp starts with "# expect: <first diagnostic line>", the message
 * as printed when the file is named by its base name (the corpus runner cds into the directory).
 */
static void test_parse_bad_corpus(void **state)
{
    (void)state;
    const char *dir = getenv("SP_BAD_DIR");
    if (dir == NULL)
        dir = "tests/plans/bad";
    DIR *dp = opendir(dir);
    if (dp == NULL)
        fail_msg("cannot open %s (run from the repository root or set SP_BAD_DIR)", dir);
    char *names[512];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "syntax_", 7) == 0 && l > 3 && strcmp(de->d_name + l - 3, ".sp") == 0) {
            assert_true(n < 512);
            names[n] = malloc(l + 1);
            memcpy(names[n++], de->d_name, l + 1);
        }
    }
    closedir(dp);
    qsort(names, n, sizeof names[0], cmp_str);
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len;
        char *text = read_all(path, &len);
        assert_non_null(text);
        const char *tag = "# expect: ";
        assert_true(len > strlen(tag) && memcmp(text, tag, strlen(tag)) == 0);
        const char *e = text + strlen(tag);
        const char *nl = memchr(e, '\n', len - strlen(tag));
        assert_non_null(nl);
        sp_diags_t d;
        sp_ast_t *ast;
        sp_diags_init(d);
        sp_status_t st = sp_parse_file(&ast, names[i], text, len, NULL, d);
        assert_int_equal(st, SP_ERR_INPUT);
        assert_true(sp_diags_count(d) >= 1);
        char *head = sp_diags_format_head(d, 0);
        if (strlen(head) != (size_t)(nl - e) || memcmp(head, e, (size_t)(nl - e)) != 0)
            fail_msg("%s:\n  got      %s\n  expected %.*s", names[i], head, (int)(nl - e), e);
        free(head);
        sp_diags_clear(d);
        free(text);
        free(names[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_mlp_dp2_tp2),
        cmocka_unit_test(test_parse_exact_literals),
        cmocka_unit_test(test_parse_locations),
        cmocka_unit_test(test_parse_source_map),
        cmocka_unit_test(test_parse_grammar),
        cmocka_unit_test(test_parse_newlines),
        cmocka_unit_test(test_parse_several_errors),
        cmocka_unit_test(test_parse_too_many_errors),
        cmocka_unit_test(test_parse_deep_nesting),
        cmocka_unit_test(test_parse_huge_identifier),
        cmocka_unit_test(test_parse_unterminated_block),
        cmocka_unit_test(test_parse_garbage_bytes),
        cmocka_unit_test(test_parse_empty_file),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_parse_path),
        cmocka_unit_test(test_parse_diags_api),
        cmocka_unit_test(test_parse_bad_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
