/* bench_mpoly.c: why the engine has its own sparse monomials: the TP rewrite of (X@W1)@W2 expanded
   with FLINT's fmpq_mpoly (one global context; one compact context per output) and with the
   engine's normal forms, on the same polynomials. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include <flint/fmpq_mpoly.h>

#include "solver.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* variable numbering: X[M,H], W1[H,F], W2[F,N] */
enum { TP = 4 };

static long vx(long i, long k, long H) { return i * H + k; }

/* y[i][j] = sum_f (sum_h x[i][h] w1[h][f]) w2[f][j], the plan computes it as a sum over TP shards
   of F; both sides expand to the same polynomial.  Returns the number of terms seen. */
static long run_mpoly(long M, long H, long F, long N, int compact)
{
    long nvars_all = M * H + H * F + F * N;
    long terms = 0;
    fmpq_mpoly_ctx_t gctx;
    if (!compact)
        fmpq_mpoly_ctx_init(gctx, nvars_all, ORD_LEX);
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            fmpq_mpoly_ctx_t lctx;
            fmpq_mpoly_ctx_struct *ctx = compact ? lctx : gctx;
            /* compact: the variables this output depends on: x[i,:], w1, w2[:,j] */
            long nv = compact ? H + H * F + F : nvars_all;
            if (compact)
                fmpq_mpoly_ctx_init(lctx, nv, ORD_LEX);
            fmpq_mpoly_t lhs, rhs, h, t, part;
            fmpq_mpoly_init(lhs, ctx);
            fmpq_mpoly_init(rhs, ctx);
            fmpq_mpoly_init(h, ctx);
            fmpq_mpoly_init(t, ctx);
            fmpq_mpoly_init(part, ctx);
            fmpq_mpoly_t a, b;
            fmpq_mpoly_init(a, ctx);
            fmpq_mpoly_init(b, ctx);
            for (int side = 0; side < 2; side++) {
                fmpq_mpoly_struct *acc = side ? rhs : lhs;
                long shard = side ? F / TP : F;
                for (long s0 = 0; s0 < F; s0 += shard) {
                    fmpq_mpoly_zero(part, ctx);
                    for (long f = s0; f < s0 + shard; f++) {
                        fmpq_mpoly_zero(h, ctx);
                        for (long k = 0; k < H; k++) {
                            long xv = compact ? k : vx(i, k, H);
                            long wv = compact ? H + k * F + f : M * H + k * F + f;
                            fmpq_mpoly_gen(a, xv, ctx);
                            fmpq_mpoly_gen(b, wv, ctx);
                            fmpq_mpoly_mul(t, a, b, ctx);
                            fmpq_mpoly_add(h, h, t, ctx);
                        }
                        long w2 = compact ? H + H * F + f : M * H + H * F + f * N + j;
                        fmpq_mpoly_gen(a, w2, ctx);
                        fmpq_mpoly_mul(t, h, a, ctx);
                        fmpq_mpoly_add(part, part, t, ctx);
                    }
                    fmpq_mpoly_add(acc, acc, part, ctx);
                }
            }
            if (!fmpq_mpoly_equal(lhs, rhs, ctx))
                fprintf(stderr, "mismatch\n");
            terms += fmpq_mpoly_length(lhs, ctx);
            fmpq_mpoly_clear(a, ctx);
            fmpq_mpoly_clear(b, ctx);
            fmpq_mpoly_clear(lhs, ctx);
            fmpq_mpoly_clear(rhs, ctx);
            fmpq_mpoly_clear(h, ctx);
            fmpq_mpoly_clear(t, ctx);
            fmpq_mpoly_clear(part, ctx);
            if (compact)
                fmpq_mpoly_ctx_clear(lctx);
        }
    if (!compact)
        fmpq_mpoly_ctx_clear(gctx);
    return terms;
}

static long run_engine(long M, long H, long F, long N)
{
    sp_engine_t *S = sp_engine_new(NULL, 1);
    sp_ectx_struct *E = sp_engine_exprs(S);
    char nm[64];
    sp_expr_t *x = malloc(sizeof(sp_expr_t) * M * H), *w1 = malloc(sizeof(sp_expr_t) * H * F),
              *w2 = malloc(sizeof(sp_expr_t) * F * N);
    for (long i = 0; i < M * H; i++) {
        snprintf(nm, sizeof nm, "x[%ld]", i);
        x[i] = sp_expr_sym(E, nm);
    }
    for (long i = 0; i < H * F; i++) {
        snprintf(nm, sizeof nm, "w1[%ld]", i);
        w1[i] = sp_expr_sym(E, nm);
    }
    for (long i = 0; i < F * N; i++) {
        snprintf(nm, sizeof nm, "w2[%ld]", i);
        w2[i] = sp_expr_sym(E, nm);
    }
    sp_expr_t *hv = malloc(sizeof(sp_expr_t) * M * F), *tmp = malloc(sizeof(sp_expr_t) * (H > F ? H : F));
    for (long i = 0; i < M; i++)
        for (long f = 0; f < F; f++) {
            for (long k = 0; k < H; k++)
                tmp[k] = sp_expr_mul(E, x[i * H + k], w1[k * F + f]);
            hv[i * F + f] = sp_expr_nary(E, SP_OP_ADD, tmp, (uint32_t)H);
        }
    sp_expr_t *lhs = malloc(sizeof(sp_expr_t) * M * N), *rhs = malloc(sizeof(sp_expr_t) * M * N);
    sp_expr_t parts[TP];
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            for (long f = 0; f < F; f++)
                tmp[f] = sp_expr_mul(E, hv[i * F + f], w2[f * N + j]);
            lhs[i * N + j] = sp_expr_nary(E, SP_OP_ADD, tmp, (uint32_t)F);
            for (int s = 0; s < TP; s++)
                parts[s] = sp_expr_nary(E, SP_OP_ADD, tmp + s * (F / TP), (uint32_t)(F / TP));
            rhs[i * N + j] = sp_expr_nary(E, SP_OP_ADD, parts, TP);
        }
    sp_result_t r;
    sp_result_init(&r);
    sp_answer_t a = sp_equiv_vec(S, lhs, rhs, (size_t)(M * N), &r);
    if (a != SP_EQUAL)
        fprintf(stderr, "engine: not equal (%d)\n", a);
    sp_result_clear(&r);
    free(x), free(w1), free(w2), free(hv), free(tmp), free(lhs), free(rhs);
    sp_engine_free(S);
    return M * N;
}

static long peak_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

int main(int argc, char **argv)
{
    long M = 16, H = 32, F = 32, N = 16;
    const char *mode = argc > 1 ? argv[1] : "engine";
    if (argc > 5) {
        M = atol(argv[2]), H = atol(argv[3]), F = atol(argv[4]), N = atol(argv[5]);
    }
    double t0 = now();
    long r = 0;
    if (!strcmp(mode, "global"))
        r = run_mpoly(M, H, F, N, 0);
    else if (!strcmp(mode, "compact"))
        r = run_mpoly(M, H, F, N, 1);
    else
        r = run_engine(M, H, F, N);
    double t1 = now();
    printf("%s %ldx%ldx%ldx%ld: %.3f s, peak %ld MB (%ld)\n", mode, M, H, F, N, t1 - t0,
           peak_kb() / 1024, r);
    return 0;
}
