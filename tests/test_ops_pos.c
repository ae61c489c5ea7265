/* test_ops_pos.c: offsets along axes (src/ops_pos.c): composition, unions, operators' rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine_fixture.h"
#include "ops.h"
#include "solver.h"

#define LIT sp_pos_term(1, 0)
#define SIZE(id) sp_pos_term(id, 0)
#define BLK(id) sp_pos_term(id, 1)

static sp_pos_t zero(void)
{
    sp_pos_t p;
    memset(&p, 0, sizeof p);
    return p;
}

/* The claim's forms compose; a sum of two monomials, a size start plus a literal, a literal
   past a literal inside blocks do not. */
static void test_pos_compose_rules(void **state)
{
    (void)state;
    sp_pos_t p = zero();
    assert_int_equal(sp_pos_compose(&p, SIZE(5)), 1);
    assert_int_equal(sp_pos_compose(&p, SIZE(5)), 1);  /* Q + Q: one monomial */
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);   /* a block of Q's monomial */
    assert_int_equal(sp_pos_compose(&p, SIZE(6)), 0);  /* Q1 + Q2 */
    assert_int_equal(p.off[0], SP_POS_MIX);
    assert_int_equal(sp_pos_compose(&p, SIZE(5)), 0);  /* mixed stays a report */

    p = zero();
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(sp_pos_compose(&p, BLK(7)), 1);   /* nested blocks */
    assert_int_equal(sp_pos_compose(&p, LIT), 1);      /* a literal inside blocks */
    assert_int_equal(sp_pos_compose(&p, LIT), 0);      /* past the block rule's literal */

    p = zero();
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(sp_pos_compose(&p, SIZE(5)), 0);  /* a block then a size start */

    p = zero();
    assert_int_equal(sp_pos_compose(&p, SIZE(5)), 1);
    assert_int_equal(sp_pos_compose(&p, LIT), 0);      /* Q + 1 */

    p = zero();
    p.ext = 1;                                         /* a dim of exact extent */
    assert_int_equal(sp_pos_compose(&p, LIT), 1);
    assert_int_equal(sp_pos_compose(&p, LIT), 2);      /* exact terms: an exact sum */
    assert_int_equal(sp_pos_compose(&p, 0), 1);        /* no term: unchanged */
    p = zero();                                        /* a dim a reduced size reaches */
    assert_int_equal(sp_pos_compose(&p, LIT), 1);
    assert_int_equal(sp_pos_compose(&p, LIT), 0);      /* 1 + 1 past the literals the rules saw */
    p = zero();                                        /* exact, cut from a reduced dim */
    p.ext = 1;
    p.inexact = 1;
    assert_int_equal(sp_pos_compose(&p, LIT), 1);
    assert_int_equal(sp_pos_compose(&p, LIT), 0);      /* NH + NKV in a reduced D */
}

/* The kinds of offsets a tensor carries (src/exec_pos.c sp_pos_note sends a run holding both a
   block plus a literal and a size term to the real sizes) */
static void test_pos_forms(void **state)
{
    (void)state;
    sp_tensor_t t;
    memset(&t, 0, sizeof t);
    t.ndim = 2;
    assert_int_equal(sp_pos_forms(&t), 0);
    sp_pos_compose(&t.pos[0], BLK(5));
    assert_int_equal(sp_pos_forms(&t), 0);             /* blocks alone */
    sp_pos_compose(&t.pos[0], LIT);
    assert_int_equal(sp_pos_forms(&t), SP_POS_BLKLIT); /* B/4 + 3 */
    sp_pos_compose(&t.pos[1], LIT);
    assert_int_equal(sp_pos_forms(&t), SP_POS_BLKLIT); /* a literal alone is none */
    memset(&t.pos[1], 0, sizeof t.pos[1]);
    sp_pos_compose(&t.pos[1], SIZE(6));
    assert_int_equal(sp_pos_forms(&t), SP_POS_BLKLIT | SP_POS_SIZE);
}

/* Unions keep up to three kinds; blocks merge whatever their monomials; a fourth is mixed. */
/* A block cut from a rescaled window (a slice 0..M of N) is a size term of the window's
   monomial; unions keep the mark. */
static void test_pos_rescaled(void **state)
{
    (void)state;
    sp_pos_t p = zero(), q = zero();
    p.rescaled = 1;
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(p.off[0], SIZE(5));               /* no D_BLK */
    assert_int_equal(sp_pos_compose(&p, BLK(7)), 0);   /* M/2 + another monomial: a sum */
    p = zero();
    p.rescaled = 1;
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(sp_pos_compose(&p, LIT), 0);      /* a size start plus a literal */
    q.rescaled = 1;
    p = zero();
    sp_pos_union(&p, &q);
    assert_int_equal(p.rescaled, 1);
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(p.off[0], SIZE(5));
    p = zero();                                        /* not rescaled: a block */
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(p.off[0], BLK(5));
}

/* A block on an inner part of a split scaled otherwise (sp_pos_t.host) stays a block of its
   own monomial (src/exec_pos.c compares it with the blocks that may sit on the host's axes);
   a literal with it is a report; unions keep the host, and two hosts joined are a window. */
static void test_pos_host(void **state)
{
    (void)state;
    sp_pos_t p = zero(), q = zero();
    p.host = 9;
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(p.off[0], BLK(5));                /* K/2 in N: a block of K */
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);   /* a chunk of the chunk */
    assert_int_equal(p.off[0], BLK(5));
    assert_int_equal(sp_pos_compose(&p, LIT), 0);      /* k*K/c + 1 in N */
    p = zero();
    p.host = 9;
    assert_int_equal(sp_pos_compose(&p, LIT), 1);
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 0);   /* 1 + k*K/c in N */
    q.host = 9;
    p = zero();
    sp_pos_union(&p, &q);
    assert_int_equal(p.host, 9);
    assert_int_equal(p.rescaled, 0);
    q.host = 11;                                       /* inner parts of two hosts */
    sp_pos_union(&p, &q);
    assert_int_equal(p.rescaled, SP_RESCALED);
    assert_int_equal(sp_pos_compose(&p, BLK(5)), 1);
    assert_int_equal(p.off[0], SIZE(5));
}

static void test_pos_union(void **state)
{
    (void)state;
    sp_pos_t a = zero(), b = zero();
    sp_pos_compose(&a, BLK(5));
    sp_pos_compose(&b, BLK(9));
    sp_pos_union(&a, &b);
    assert_int_equal(a.off[1], 0); /* one block descriptor */
    assert_int_equal(sp_pos_compose(&a, BLK(3)), 1);
    sp_pos_t c = zero(), d = zero(), e = zero();
    sp_pos_compose(&c, SIZE(5));
    sp_pos_compose(&d, SIZE(6));
    sp_pos_compose(&e, SIZE(7));
    sp_pos_union(&a, &c);
    sp_pos_union(&a, &d);
    assert_int_not_equal(a.off[0], SP_POS_MIX);
    sp_pos_union(&a, &e);
    assert_int_equal(a.off[0], SP_POS_MIX);
}

/* A layout's block adds a block term of the full tensor's extent; rank 0's block adds none;
   an extent not known gets a fresh monomial. */
static void test_pos_block(void **state)
{
    (void)state;
    sp_tensor_t full, local;
    memset(&full, 0, sizeof full);
    memset(&local, 0, sizeof local);
    full.ndim = local.ndim = 2;
    full.shape[0] = 8;
    full.shape[1] = 4;
    local.shape[0] = 4;
    local.shape[1] = 4;
    full.pos[0].ext = 5;
    int32_t next = 0;
    int64_t start0[2] = {0, 0}, start1[2] = {4, 0};
    assert_int_equal(sp_pos_block(&local, &full, start0, &next), 1);
    assert_int_equal(local.pos[0].off[0], 0);
    assert_int_equal(sp_pos_block(&local, &full, start1, &next), 1);
    assert_int_equal(local.pos[0].off[0], BLK(5));
    assert_int_equal(local.pos[0].ext, 5);
    /* a sliced model tensor (a size start) compared block-wise: a sum */
    sp_pos_compose(&full.pos[0], SIZE(6));
    assert_int_equal(sp_pos_block(&local, &full, start1, &next), 0);
    /* an unknown extent: a fresh id above the interned ones */
    memset(full.pos, 0, sizeof full.pos);
    int64_t start2[2] = {0, 2};
    local.shape[1] = 2;
    assert_int_equal(sp_pos_block(&local, &full, start2, &next), 1);
    assert_true(local.pos[1].ext >= (1 << 24));
}

/* Concatenation: part k at k times the parts' extent, a block term; with offsets and no known
   extent, a report. */
static void test_pos_concat_piece(void **state)
{
    (void)state;
    sp_tensor_t a, b, out;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&out, 0, sizeof out);
    a.ndim = b.ndim = out.ndim = 1;
    a.shape[0] = b.shape[0] = 3;
    out.shape[0] = 6;
    a.pos[0].ext = b.pos[0].ext = 5;
    sp_pos_compose(&a.pos[0], BLK(5));
    sp_pos_compose(&b.pos[0], BLK(5));
    const sp_tensor_t *parts[2] = {&a, &b};
    assert_int_equal(sp_pos_concat(&out, parts, 2, 0), 1);
    assert_int_equal(out.pos[0].ext, 5);
    a.pos[0].ext = b.pos[0].ext = 0;
    assert_int_equal(sp_pos_concat(&out, parts, 2, 0), 0);
    assert_int_equal(out.pos[0].off[0], SP_POS_MIX);
    /* a piece of a dim of a size start's monomial: one monomial; of another, a sum */
    sp_tensor_t x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.ndim = y.ndim = 1;
    x.shape[0] = 6;
    y.shape[0] = 3;
    x.pos[0].ext = 5;
    sp_pos_compose(&x.pos[0], SIZE(5));
    assert_int_equal(sp_pos_piece(&y, &x, 0, 1), 1);
    x.pos[0].ext = 6;
    assert_int_equal(sp_pos_piece(&y, &x, 0, 1), 0);
    assert_int_equal(sp_pos_piece(&y, &x, 0, 0), 1); /* piece 0: no term */
}

static void symbols(fx_t *f, sp_tensor_t *t, int ndim, const int64_t *shape, const char *name)
{
    sp_tensor_init(t);
    assert_true(sp_tensor_alloc(t, ndim, shape));
    assert_true(sp_tensor_symbols(f->E, t, name));
}

static void num_attr(sp_attr_t *a, const char *key, long v)
{
    memset(a, 0, sizeof *a);
    fmpq_init(a->num);
    a->key = key;
    a->kind = SP_ATTR_NUM;
    fmpq_set_si(a->num, v, 1);
}

/* a reshape's shape list (the caller sets a->list and a->nlist; fmpq_clear(a->num) after) */
static void shape_attr(sp_attr_t *a, int64_t *list, int n)
{
    memset(a, 0, sizeof *a);
    fmpq_init(a->num);
    a->key = "shape";
    a->kind = SP_ATTR_LIST;
    a->list = list;
    a->nlist = n;
}

/* Operators carry offsets: elementwise by broadcasting, matmul M from a and N from b (K
   dropped), a reduction drops its dim, a transpose swaps, a slice's shift is mixed until the
   interpreter reads its start (src/exec.c), a reshape keeps blocks. */
static void test_pos_operators(void **state)
{
    fx_t *f = *state;
    sp_tensor_t a, b, y;
    int64_t sa[2] = {4, 3}, sb[2] = {3, 5};
    symbols(f, &a, 2, sa, "a");
    symbols(f, &b, 2, sb, "b");
    sp_tensor_init(&y);
    sp_pos_compose(&a.pos[0], BLK(7));
    sp_pos_compose(&a.pos[1], SIZE(8));
    sp_pos_compose(&b.pos[1], SIZE(9));
    sp_op_err_t err;
    assert_true(sp_ops_apply(f->E, "matmul", (sp_tensor_t[]){a, b}, 2, NULL, 0, 0, &y, &err));
    assert_int_equal(y.pos[0].off[0], BLK(7));
    assert_int_equal(y.pos[1].off[0], SIZE(9));
    assert_int_equal(y.pos[1].off[1], 0); /* a's K (SIZE 8) is not N's */
    sp_tensor_t t;
    sp_tensor_init(&t);
    assert_true(sp_ops_apply(f->E, "transpose", &a, 1, NULL, 0, 0, &t, &err));
    assert_int_equal(t.pos[0].off[0], SIZE(8));
    assert_int_equal(t.pos[1].off[0], BLK(7));
    sp_tensor_t s;
    sp_tensor_init(&s);
    sp_attr_t at[1];
    num_attr(&at[0], "dim", 1);
    assert_true(sp_ops_apply(f->E, "sum", &a, 1, at, 1, 0, &s, &err));
    assert_int_equal(s.ndim, 1);
    assert_int_equal(s.pos[0].off[0], BLK(7));
    fmpq_clear(at[0].num);
    sp_tensor_t e;
    sp_tensor_init(&e);
    assert_true(sp_ops_apply(f->E, "mul", (sp_tensor_t[]){a, a}, 2, NULL, 0, 0, &e, &err));
    assert_int_equal(e.pos[0].off[0], BLK(7));
    sp_tensor_t sl;
    sp_tensor_init(&sl);
    sp_attr_t sat[3];
    num_attr(&sat[0], "dim", 0);
    num_attr(&sat[1], "start", 1);
    num_attr(&sat[2], "end", 3);
    assert_true(sp_ops_apply(f->E, "slice", &a, 1, sat, 3, 0, &sl, &err));
    assert_int_equal(sl.pos[0].off[0], SP_POS_MIX);
    assert_int_equal(sl.pos[1].off[0], SIZE(8));
    for (int i = 0; i < 3; i++)
        fmpq_clear(sat[i].num);
    sp_tensor_t r;
    sp_tensor_init(&r);
    sp_attr_t rat[1];
    memset(rat, 0, sizeof rat);
    fmpq_init(rat[0].num);
    rat[0].key = "shape";
    rat[0].kind = SP_ATTR_LIST;
    int64_t shp[1] = {12};
    rat[0].list = shp;
    rat[0].nlist = 1;
    sp_tensor_t ab; /* a with blocks only: merged stays a block */
    sp_tensor_init(&ab);
    sp_tensor_copy(&ab, &a);
    memset(&ab.pos[1], 0, sizeof ab.pos[1]);
    assert_true(sp_ops_apply(f->E, "reshape", &ab, 1, rat, 1, 0, &r, &err));
    assert_int_equal(r.pos[0].off[0] & 2, 2);
    assert_true(sp_ops_apply(f->E, "reshape", &a, 1, rat, 1, 0, &r, &err));
    assert_int_equal(err.clamped, SP_CLAMP_OFFSET); /* two shifted dims merged */
    fmpq_clear(rat[0].num);
    sp_tensor_clear(&a);
    sp_tensor_clear(&b);
    sp_tensor_clear(&y);
    sp_tensor_clear(&t);
    sp_tensor_clear(&s);
    sp_tensor_clear(&e);
    sp_tensor_clear(&sl);
    sp_tensor_clear(&r);
    sp_tensor_clear(&ab);
}

static int has_desc(const sp_pos_t *p, int32_t d)
{
    for (int i = 0; i < SP_POS_NOFF; i++)
        if (p->off[i] == d)
            return 1;
    return 0;
}

/* Operands that are not aligned from the right: attention_grad_k's mask [Sq, Sk] gives its Sk
   to the gradient's Sk (not to D); cross_entropy_grad's mask [R] to the rows (not to V); an
   embedding's literal ids read the table's rows at its offset plus a literal (a size start
   plus a literal is reported). */
static void test_pos_gradient_operands(void **state)
{
    fx_t *f = *state;
    sp_tensor_t q, k, v, m, dy, g;
    int64_t sq[3] = {1, 2, 4}, sk[3] = {1, 3, 4}, sm[2] = {2, 3};
    symbols(f, &q, 3, sq, "q");
    symbols(f, &k, 3, sk, "k");
    symbols(f, &v, 3, sk, "v");
    symbols(f, &m, 2, sm, "m");
    symbols(f, &dy, 3, sq, "dy");
    sp_tensor_init(&g);
    sp_pos_compose(&m.pos[1], SIZE(11));
    sp_op_err_t err;
    assert_true(sp_ops_apply(f->E, "attention_grad_k", (sp_tensor_t[]){q, k, v, m, dy}, 5, NULL, 0,
                             0, &g, &err));
    assert_true(has_desc(&g.pos[1], SIZE(11)));
    assert_false(has_desc(&g.pos[2], SIZE(11)));

    sp_tensor_t l, t, mk, ce;
    int64_t sl[2] = {3, 5}, sr[1] = {3};
    symbols(f, &l, 2, sl, "l");
    symbols(f, &t, 2, sl, "t");
    symbols(f, &mk, 1, sr, "mk");
    sp_tensor_init(&ce);
    sp_pos_compose(&mk.pos[0], SIZE(12));
    assert_true(sp_ops_apply(f->E, "cross_entropy_grad", (sp_tensor_t[]){l, t, mk}, 3, NULL, 0, 0,
                             &ce, &err));
    assert_true(has_desc(&ce.pos[0], SIZE(12)));
    assert_false(has_desc(&ce.pos[1], SIZE(12)));

    sp_tensor_t e;
    sp_tensor_init(&e);
    sp_attr_t ids;
    memset(&ids, 0, sizeof ids);
    fmpq_init(ids.num);
    ids.key = "ids";
    ids.kind = SP_ATTR_LIST;
    int64_t two[1] = {2}, zero_id[1] = {0};
    ids.list = zero_id;
    ids.nlist = 1;
    sp_pos_compose(&l.pos[0], SIZE(13));
    assert_true(sp_ops_apply(f->E, "embedding", &l, 1, &ids, 1, 0, &e, &err));
    assert_int_equal(err.clamped, SP_CLAMP_NONE);
    assert_true(has_desc(&e.pos[0], SIZE(13))); /* row Q + 0 */
    ids.list = two;
    assert_true(sp_ops_apply(f->E, "embedding", &l, 1, &ids, 1, 0, &e, &err));
    assert_int_equal(err.clamped, SP_CLAMP_OFFSET); /* row Q + 2 */
    fmpq_clear(ids.num);

    /* an exact extent joined with one that is not: positions that may reach a reduced dim */
    sp_tensor_t s;
    sp_tensor_init(&s);
    memset(l.pos, 0, sizeof l.pos);
    memset(t.pos, 0, sizeof t.pos);
    l.pos[0].ext = 1;
    t.pos[0].ext = 7;
    assert_true(sp_ops_apply(f->E, "add", (sp_tensor_t[]){l, t}, 2, NULL, 0, 0, &s, &err));
    assert_int_equal(s.pos[0].ext, 1);
    assert_int_equal(s.pos[0].inexact, 1);
    assert_int_equal(sp_pos_compose(&s.pos[0], LIT), 1);
    assert_int_equal(sp_pos_compose(&s.pos[0], LIT), 0); /* no exact sum there */
    sp_tensor_clear(&s);
    sp_tensor_t *all[] = {&q, &k, &v, &m, &dy, &g, &l, &t, &mk, &ce, &e};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sp_tensor_clear(all[i]);
}

/* A reshape's merged axis takes blocks only; a split's outer part literals too where its count
   keeps its real size, its inner part blocks only (a flat position A of [S, S] is A div S,
   A mod S; row 3 of the inner part of [4, N/4] adds to the outer part's block). */
static void test_pos_reshape_views(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, m, s;
    int64_t sx[2] = {4, 6};
    symbols(f, &x, 2, sx, "x");
    sp_tensor_init(&m);
    sp_tensor_init(&s);
    x.pos[0].ext = x.pos[1].ext = 5; /* extents of reduced sizes */
    int64_t flat[1] = {24}, split[3] = {2, 2, 6};
    sp_attr_t a;
    shape_attr(&a, flat, 1);
    sp_op_err_t err;
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &m, &err));
    assert_int_equal(m.pos[0].view, SP_VIEW_MERGED);
    m.pos[0].ext = 6;
    sp_pos_t p = m.pos[0];
    assert_int_equal(m.pos[0].inner_r, 6);              /* x's columns inside its rows */
    assert_int_equal(m.pos[0].inner_id, 5);
    assert_int_equal(sp_pos_compose(&p, BLK(6)), 1);  /* a block of the merge */
    assert_true(p.view & SP_VIEW_BLOCKED);            /* whole rows? src/exec_pos.c */
    p = m.pos[0];
    assert_int_equal(sp_pos_compose(&p, SIZE(7)), 0); /* A: row A div S, column A mod S */
    p = m.pos[0];
    assert_int_equal(sp_pos_compose(&p, LIT), 0);
    a.list = split;
    a.nlist = 3;
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &s, &err));
    assert_int_equal(s.pos[0].view, SP_VIEW_OUTER);
    assert_int_equal(s.pos[1].view, SP_VIEW_INNER);
    assert_int_equal(s.pos[2].view, 0);               /* x's columns, kept */
    s.pos[0].ext = 1;                                 /* a count of real size */
    p = s.pos[0];
    assert_int_equal(sp_pos_compose(&p, LIT), 1);     /* k pieces: a block of x's rows */
    s.pos[0].ext = 9;
    p = s.pos[0];
    assert_int_equal(sp_pos_compose(&p, LIT), 0);     /* k pieces of a reduced count */
    s.pos[1].ext = 9;
    p = s.pos[1];
    assert_int_equal(sp_pos_compose(&p, LIT), 0);     /* a literal after the outer block */
    p = s.pos[1];
    assert_int_equal(p.src, SP_POS_MIX);              /* its scale: src/exec_pos.c */
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 0);
    p = s.pos[1];
    p.src = 5;                                        /* scaled as x's rows */
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 1);
    assert_int_equal(p.off[0], BLK(5));
    fmpq_clear(a.num);
    sp_tensor_clear(&x);
    sp_tensor_clear(&m);
    sp_tensor_clear(&s);
}

/* helper-37: a block on a split's outer part or a merge is a block of the axis it was cut
   from (A/2 rows of N/A: N/2); a window stays one through a reshape without an offset; views
   of several scales joined keep them for src/exec_pos.c to compare, an axis of one broadcast
   does not count. */
static void test_pos_view_scales(void **state)
{
    fx_t *f = *state;
    sp_tensor_t x, s, m;
    int64_t sx[2] = {4, 6};
    symbols(f, &x, 2, sx, "x");
    sp_tensor_init(&s);
    sp_tensor_init(&m);
    x.pos[0].ext = 5;
    x.pos[1].ext = 7;
    x.pos[0].rescaled = 1;                            /* a window 0..M of N, no offset */
    int64_t split[3] = {2, 2, 6}, flat[1] = {24};
    sp_attr_t a;
    shape_attr(&a, split, 3);
    sp_op_err_t err;
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &s, &err));
    assert_int_equal(s.pos[0].src, 5);                /* x's rows' scale */
    assert_int_equal(s.pos[0].rescaled, 1);           /* kept without an offset */
    assert_int_equal(s.pos[2].src, 0);                /* x's columns, the same axis */
    s.pos[0].ext = 9;
    s.pos[0].rescaled = 0;
    sp_pos_t p = s.pos[0];
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 1);
    assert_int_equal(p.off[0], BLK(5));               /* a block of x's rows, not of A */
    s.pos[0].rescaled = 1;
    p = s.pos[0];
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 1);
    assert_int_equal(p.off[0], SIZE(5));              /* of a window: a size term of M */
    x.pos[0].rescaled = 0;
    x.pos[0].ext = 1;                                 /* exact rows: the outer part's own */
    sp_tensor_clear(&s);
    sp_tensor_init(&s);
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &s, &err));
    assert_int_equal(s.pos[0].src, 0);
    x.pos[0].ext = 0;                                 /* not known: a block is reported */
    sp_tensor_clear(&s);
    sp_tensor_init(&s);
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &s, &err));
    assert_int_equal(s.pos[0].src, SP_POS_MIX);
    x.pos[0].ext = 5;
    a.list = flat;
    a.nlist = 1;
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &m, &err));
    assert_int_equal(m.pos[0].src, 5);                /* a merge: its outermost axis's */

    sp_pos_t v = zero(), w = zero(), plain = zero(), one = zero();
    v.view = w.view = SP_VIEW_OUTER;
    v.src = 5;
    w.src = 6;
    plain.ext = 8;
    p = zero();
    sp_pos_union(&p, &v);
    assert_int_equal(p.src, 5);
    assert_int_equal(p.src2, 0);
    sp_pos_union(&p, &w);                             /* q's heads and k's */
    assert_int_equal(p.src2, 6);
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 0);  /* not compared yet: reported */
    p = zero();
    sp_pos_union(&p, &plain);
    sp_pos_union(&p, &v);                             /* an axis no view, then a view */
    assert_int_equal(p.src, 5);
    assert_int_equal(p.src2, -1);
    sp_pos_union(&p, &w);                             /* three scales */
    assert_int_equal(p.src, SP_POS_MIX);
    assert_int_equal(p.src2, 0);
    int64_t sh1[2] = {1, 4}, sh4[2] = {4, 4};
    sp_tensor_t b1, b4, o;
    symbols(f, &b1, 2, sh1, "b");
    symbols(f, &b4, 2, sh4, "c");
    sp_tensor_init(&o);
    b4.pos[0] = v;
    b1.pos[0] = one;
    b1.pos[0].ext = 1;
    sp_tensor_t in[2] = {b4, b1};
    assert_true(sp_ops_apply(f->E, "add", in, 2, NULL, 0, 0, &o, &err));
    assert_int_equal(o.pos[0].src, 5);                /* a broadcast axis of one: not read */
    assert_int_equal(o.pos[0].src2, 0);
    fmpq_clear(a.num);
    sp_tensor_clear(&x);
    sp_tensor_clear(&s);
    sp_tensor_clear(&m);
    sp_tensor_clear(&b1);
    sp_tensor_clear(&b4);
    sp_tensor_clear(&o);
}

/* A grouped read (attention's key heads, NKV of them for NH query heads) joins no scale into
   the output's heads: a block there is one of the query heads, of their scale; a merge takes
   the rescaled window of its outermost axis only, and keeps an inner one's for the parts a
   further reshape splits from it */
static void test_pos_grouped_merged(void **state)
{
    fx_t *f = *state;
    int64_t sq[3] = {4, 2, 3}, sk[3] = {2, 2, 3}, sx[2] = {2, 3}, flat[1] = {6};
    sp_tensor_t q, k, v, o, x, m, s;
    symbols(f, &q, 3, sq, "q");
    symbols(f, &k, 3, sk, "k");
    symbols(f, &v, 3, sk, "v");
    sp_tensor_init(&o);
    sp_tensor_init(&m);
    sp_tensor_init(&s);
    q.pos[0].view = k.pos[0].view = v.pos[0].view = SP_VIEW_OUTER;
    q.pos[0].ext = 7;
    k.pos[0].ext = v.pos[0].ext = 8;
    q.pos[0].src = 5;                                 /* QD's scale */
    k.pos[0].src = v.pos[0].src = 6;                  /* KD's */
    sp_op_err_t err;
    assert_true(sp_ops_apply(f->E, "attention", (sp_tensor_t[]){q, k, v}, 3, NULL, 0, 0, &o, &err));
    assert_int_equal(o.pos[0].src, 5);
    assert_int_equal(o.pos[0].src2, 0);               /* k's and v's heads: grouped */
    assert_int_equal(o.pos[0].grp, 8);                /* a block of it reads k's at k's scale */
    {
        int64_t merged_shape[2] = {8, 3};
        sp_attr_t ma;
        sp_tensor_t om;
        sp_tensor_init(&om);
        shape_attr(&ma, merged_shape, 2);
        assert_true(sp_ops_apply(f->E, "reshape", &o, 1, &ma, 1, 0, &om, &err));
        assert_int_equal(om.pos[0].grp, 8);           /* a view keeps it, offsets or none */
        sp_tensor_clear(&om);
    }
    sp_tensor_clear(&o);
    sp_tensor_init(&o);
    k.pos[0].ext = 0;                                 /* k's heads' extent not known */
    assert_true(sp_ops_apply(f->E, "attention", (sp_tensor_t[]){q, k, v}, 3, NULL, 0, 0, &o, &err));
    assert_int_equal(o.pos[0].grp, -1);               /* a block there: the real sizes */
    k.pos[0].ext = 8;
    sp_tensor_clear(&o);
    sp_tensor_init(&o);
    sp_tensor_t k4, v4;
    symbols(f, &k4, 3, sq, "k");
    symbols(f, &v4, 3, sq, "v");
    k4.pos[0] = v4.pos[0] = k.pos[0];
    assert_true(
        sp_ops_apply(f->E, "attention", (sp_tensor_t[]){q, k4, v4}, 3, NULL, 0, 0, &o, &err));
    assert_int_equal(o.pos[0].src, 5);
    assert_int_equal(o.pos[0].src2, 6);               /* as many heads: joined, compared */
    assert_int_equal(o.pos[0].grp, 0);                /* no grouped read */

    symbols(f, &x, 2, sx, "x");
    x.pos[0].ext = 7;
    x.pos[1].ext = 9;
    x.pos[1].rescaled = SP_RESCALED;                  /* the inner part HD of QD */
    sp_attr_t a;
    shape_attr(&a, flat, 1);
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &m, &err));
    assert_int_equal(m.pos[0].rescaled, SP_RESCALED_INNER);
    sp_pos_t p = m.pos[0];
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 1);
    assert_int_equal(p.off[0], BLK(7));               /* whole heads: a block of them */
    a.list = sx;
    a.nlist = 2;
    assert_true(sp_ops_apply(f->E, "reshape", &m, 1, &a, 1, 0, &s, &err));
    assert_int_equal(s.pos[0].rescaled, SP_RESCALED); /* a part split from the merge */
    assert_int_equal(s.pos[1].rescaled, SP_RESCALED);
    x.pos[0].rescaled = SP_RESCALED;                  /* the outermost axis a window */
    sp_tensor_clear(&m);
    sp_tensor_init(&m);
    a.list = flat;
    a.nlist = 1;
    assert_true(sp_ops_apply(f->E, "reshape", &x, 1, &a, 1, 0, &m, &err));
    assert_int_equal(m.pos[0].rescaled, SP_RESCALED | SP_RESCALED_INNER);
    p = m.pos[0];
    assert_int_equal(sp_pos_compose(&p, BLK(9)), 1);
    assert_int_equal(p.off[0], SIZE(7));              /* a block of a window: a size term */
    fmpq_clear(a.num);
    sp_tensor_clear(&q);
    sp_tensor_clear(&k);
    sp_tensor_clear(&v);
    sp_tensor_clear(&k4);
    sp_tensor_clear(&v4);
    sp_tensor_clear(&o);
    sp_tensor_clear(&x);
    sp_tensor_clear(&m);
    sp_tensor_clear(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pos_compose_rules),
        cmocka_unit_test(test_pos_rescaled),
        cmocka_unit_test(test_pos_host),
        cmocka_unit_test(test_pos_union),
        cmocka_unit_test(test_pos_block),
        cmocka_unit_test(test_pos_concat_piece),
        cmocka_unit_test(test_pos_forms),
        cmocka_unit_test_setup_teardown(test_pos_operators, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pos_gradient_operands, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pos_reshape_views, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pos_view_scales, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pos_grouped_merged, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
