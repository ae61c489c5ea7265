/* shard.c: partial reports of a sharded check (--shard i/N) and their merge. */
#include <flint/flint.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "../include/shardproof.h"
#include "check.h"
#include "cli.h"

#define PARTIAL_FORMAT "shardproof-partial"
#define PARTIAL_SCHEMA 2 /* 2: each shard claims its stages by fingerprint (1: keys, groups) */

static const char *const status_names[] = {"pending", "proved", "failed", "unknown", "memoized"};

/* FNV-1a over the input text: merge refuses partial reports of another input. */
static uint64_t text_hash(const char *text, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)text[i]) * UINT64_C(1099511628211);
    return h;
}

/* s as a JSON string (invalid UTF-8 replaced), null for NULL */
static json_t *jstr(const char *s)
{
    if (s == NULL)
        return json_null();
    char *c = sp_utf8_clean(s);
    json_t *j = json_string(c);
    flint_free(c);
    return j;
}

static json_t *jhex(uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%016" PRIx64, v);
    return json_string(b);
}

void shardproof_write_partial(const shardproof_t *C, FILE *out, const char *text, size_t len,
                              const char *const *args, int nargs)
{
    json_t *o = json_object(), *a = json_array(), *results = json_array();
    json_object_set_new(o, "format", json_string(PARTIAL_FORMAT));
    json_object_set_new(o, "schema", json_integer(PARTIAL_SCHEMA));
    json_object_set_new(o, "version", json_string(SP_VERSION));
    json_object_set_new(o, "file", jstr(C->path));
    json_object_set_new(o, "input_fnv1a64", jhex(text_hash(text, len)));
    for (int i = 0; i < nargs; i++)
        json_array_append_new(a, jstr(args[i]));
    json_object_set_new(o, "args", a);
    json_object_set_new(o, "shard", json_integer(C->opt.shard_index));
    json_object_set_new(o, "shards", json_integer(C->opt.shard_count));
    json_object_set_new(o, "stages", json_integer(C->nstages));
    /* the shard's check went on at other sizes or on the real mesh (src/check.c run_exact:
       a grown dim, the real sizes): its stages are not those merge executes */
    json_object_set_new(o, "resized", json_boolean(C->resize_note[0] != '\0' || C->cutoff_fallback));
    uint64_t *fp = flint_calloc((size_t)(C->nstages ? C->nstages : 1), sizeof(uint64_t));
    int have_fp = sp_shard_fingerprints(C, fp);
    for (int i = 0; i < C->nstages; i++) {
        const sp_stage_t *s = &C->stages[i];
        json_t *r = json_object();
        json_object_set_new(r, "id", json_integer(s->id + 1));
        if (have_fp && sp_shard_mine(C, i)) /* another shard's stage: hollow values here */
            json_object_set_new(r, "fingerprint", jhex(fp[i]));
        json_object_set_new(r, "status", json_string(status_names[s->status]));
        if (s->status != SP_STAGE_PENDING) {
            json_object_set_new(r, "elements", json_integer(s->elements));
            json_object_set_new(r, "symmetric", json_integer(s->symmetric));
        }
        if (s->memo_of >= 0)
            json_object_set_new(r, "memo_of", json_integer(s->memo_of + 1));
        if (s->prob_bits > 0)
            json_object_set_new(r, "prob_bits", json_integer(s->prob_bits));
        if (s->status == SP_STAGE_FAILED || s->status == SP_STAGE_UNKNOWN) {
            json_object_set_new(r, "why", json_integer((int)s->why));
            json_object_set_new(r, "fail_rank", json_integer(s->fail_rank));
            json_object_set_new(r, "fail_index", json_integer(s->fail_index));
            json_t *sh = json_array();
            for (int d = 0; d < s->fail_ndim; d++)
                json_array_append_new(sh, json_integer(s->fail_shape[d]));
            json_object_set_new(r, "fail_shape", sh);
            const char *names[] = {"plan_value", "model_value", "cex", "cex_values", "reason"};
            const char *vals[] = {s->plan_value, s->model_value, s->cex, s->cex_values, s->reason};
            for (int k = 0; k < 5; k++)
                if (vals[k])
                    json_object_set_new(r, names[k], jstr(vals[k]));
        }
        json_array_append_new(results, r);
    }
    flint_free(fp);
    json_object_set_new(o, "results", results);
    json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(o);
}

/* ---- merge -------------------------------------------------------------------------------- */

typedef struct {
    json_t *root, *results;
    const char *name;
    int shard;
} part_t;

#define MERR(...)                                                                                \
    do {                                                                                         \
        snprintf(err, errlen, __VA_ARGS__);                                                      \
        goto fail;                                                                               \
    } while (0)

static int json_int_in(json_t *o, const char *key, json_int_t lo, json_int_t hi, json_int_t *v)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_integer(x))
        return 0;
    *v = json_integer_value(x);
    return *v >= lo && *v <= hi;
}

static char *flint_dup_or_null(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? sp_strdup(s) : NULL;
}

/* Copy one stage's result from its shard's entry r. */
static int take_result(sp_stage_t *s, json_t *r, int nstages, char *err, size_t errlen,
                       const char *name)
{
    const char *st = json_string_value(json_object_get(r, "status"));
    int status = -1;
    for (int k = 0; st && k < 5; k++)
        if (!strcmp(st, status_names[k]))
            status = k;
    json_int_t v;
    if (status <= 0)
        MERR("%s: results[%d].status: expected proved, failed, unknown or memoized", name, s->id);
    s->status = (sp_stage_status_t)status;
    if (!json_int_in(r, "elements", 0, INT64_MAX, &v))
        MERR("%s: results[%d].elements: expected a count", name, s->id);
    s->elements = v;
    if (!json_int_in(r, "symmetric", 0, INT64_MAX, &v))
        MERR("%s: results[%d].symmetric: expected a count", name, s->id);
    s->symmetric = v;
    s->memo_of = -1;
    if (json_object_get(r, "memo_of")) {
        if (!json_int_in(r, "memo_of", 1, nstages, &v))
            MERR("%s: results[%d].memo_of: expected a stage id", name, s->id);
        s->memo_of = (int)v - 1;
    }
    if (json_object_get(r, "prob_bits")) {
        if (!json_int_in(r, "prob_bits", 1, INT64_MAX, &v))
            MERR("%s: results[%d].prob_bits: expected a positive number", name, s->id);
        s->prob_bits = v;
    }
    if (status == SP_STAGE_FAILED || status == SP_STAGE_UNKNOWN) {
        json_t *sh = json_object_get(r, "fail_shape");
        if (!json_int_in(r, "why", 0, 64, &v))
            MERR("%s: results[%d].why: expected a reason code", name, s->id);
        s->why = (sp_why_t)v;
        if (!json_int_in(r, "fail_rank", -1, INT64_MAX, &v)) /* -1: no element compared */
            MERR("%s: results[%d].fail_rank: expected a rank", name, s->id);
        sp_stage_fail_at(s, v);
        if (!json_int_in(r, "fail_index", 0, INT64_MAX, &v))
            MERR("%s: results[%d].fail_index: expected an index", name, s->id);
        s->fail_index = v;
        if (!json_is_array(sh) || json_array_size(sh) > SP_MAX_DIMS)
            MERR("%s: results[%d].fail_shape: expected at most %d sizes", name, s->id, SP_MAX_DIMS);
        s->fail_ndim = (int)json_array_size(sh);
        for (int d = 0; d < s->fail_ndim; d++) {
            json_t *x = json_array_get(sh, (size_t)d);
            if (!json_is_integer(x) || json_integer_value(x) < 0)
                MERR("%s: results[%d].fail_shape[%d]: expected a size", name, s->id, d);
            s->fail_shape[d] = json_integer_value(x);
        }
        s->plan_value = flint_dup_or_null(r, "plan_value");
        s->model_value = flint_dup_or_null(r, "model_value");
        s->cex = flint_dup_or_null(r, "cex");
        s->cex_values = flint_dup_or_null(r, "cex_values");
        s->reason = flint_dup_or_null(r, "reason");
    }
    return 1;
fail:
    return 0;
}

/*
 * What a whole check decides after its proofs, from the reference executor's run, which no
 * shard makes: a stage difference that the executor does not reproduce sends a whole check to
 * the real sizes, the real mesh, or a run without the inferred relations (src/check.c
 * run_exact, run_inferred), and a plan whose inferred lineage the executor found wrong is
 * proved stage by stage up to the first failure (src/stage.c solve_up_to_failure).  Then merge
 * checks the whole input itself.
 */
static int whole_run_decides(const sp_check_t *C, shardproof_verdict_t v)
{
    return C->infer_diverged || (v == SHARDPROOF_UNKNOWN && (C->resize || C->unlifted));
}

shardproof_verdict_t shardproof_merge_partials(shardproof_t *C, const char *text, size_t len,
                                               const char *const *texts, const char *const *names,
                                               int nparts, char *err, size_t errlen)
{
    shardproof_verdict_t verdict = SHARDPROOF_BAD_INPUT;
    part_t *P = flint_calloc((size_t)(nparts ? nparts : 1), sizeof(part_t));
    int *rep = NULL, *srep = NULL, *owner = NULL, *redo = NULL;
    uint64_t *fp = NULL;
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, text_hash(text, len));
    json_int_t nshards = 0;
    int resized = 0;
    for (int k = 0; k < nparts; k++) {
        json_error_t je;
        const char *name = names[k];
        P[k].name = name;
        P[k].root = json_loads(texts[k], JSON_REJECT_DUPLICATES, &je);
        if (P[k].root == NULL)
            MERR("%s:%d:%d: invalid JSON: %s", name, je.line, je.column, je.text);
        json_t *o = P[k].root;
        const char *fmt = json_string_value(json_object_get(o, "format"));
        json_int_t v;
        if (fmt == NULL || strcmp(fmt, PARTIAL_FORMAT) != 0)
            MERR("%s: format: not a shardproof partial report (made by check --shard i/N)", name);
        if (!json_int_in(o, "schema", PARTIAL_SCHEMA, PARTIAL_SCHEMA, &v))
            MERR("%s: schema: expected %d", name, PARTIAL_SCHEMA);
        const char *h = json_string_value(json_object_get(o, "input_fnv1a64"));
        if (h == NULL || strcmp(h, hash) != 0)
            MERR("%s: input_fnv1a64: made from another version of %s (the file changed since)", name,
                 C->path);
        if (!json_int_in(o, "shards", 2, 1 << 20, &v))
            MERR("%s: shards: expected a shard count of at least 2", name);
        if (k > 0 && v != nshards)
            MERR("%s: shards: %lld, but %s has %lld", name, (long long)v, names[0],
                 (long long)nshards);
        nshards = v;
        if (!json_int_in(o, "shard", 0, nshards - 1, &v))
            MERR("%s: shard: expected 0 to %lld", name, (long long)nshards - 1);
        P[k].shard = (int)v;
        for (int j = 0; j < k; j++)
            if (P[j].shard == P[k].shard)
                MERR("%s: shard %d/%lld is also in %s", name, P[k].shard, (long long)nshards,
                     names[j]);
        if (json_is_true(json_object_get(o, "resized")))
            resized = 1;
        if (!resized && !json_int_in(o, "stages", C->nstages, C->nstages, &v))
            MERR("%s: stages: expected %d, the stages of this input with these options", name,
                 C->nstages);
        P[k].results = json_object_get(o, "results");
        if (!resized &&
            (!json_is_array(P[k].results) || json_array_size(P[k].results) != (size_t)C->nstages))
            MERR("%s: results: expected %d entries", name, C->nstages);
    }
    if (nparts == 0 || nshards != nparts) {
        for (int s = 0; s < nshards; s++) {
            int found = 0;
            for (int k = 0; k < nparts; k++)
                found |= P[k].shard == s;
            if (!found)
                MERR("merge: shard %d/%lld is missing", s, (long long)nshards);
        }
        MERR("merge: no partial reports");
    }
    if (resized) {
        /* a shard's check went on at a grown size or at the real sizes (src/check.c
           run_exact): the whole input checked here, as `check` would */
        sp_diags_mark_t none;
        memset(&none, 0, sizeof none);
        sp_diags_restore(C->d, &none);
        verdict = shardproof_check(C, C->path, text, len);
        C->merged_whole = 1;
        goto fail;
    }
    rep = sp_stages_group(C, &srep);
    fp = flint_calloc((size_t)(C->nstages ? C->nstages : 1), sizeof(uint64_t));
    if (!sp_shard_fingerprints(C, fp))
        MERR("merge: out of memory");
    /* the owner of a stage: the one shard that reports its fingerprint (each shard chose its
       stages from its own trace of the same input: src/shard_exec.c) */
    owner = flint_malloc((size_t)(C->nstages ? C->nstages : 1) * sizeof(int));
    for (int i = 0; i < C->nstages; i++) {
        owner[i] = -1;
        for (int k = 0; k < nparts; k++) {
            json_t *r = json_array_get(P[k].results, (size_t)i);
            if (json_object_get(r, "fingerprint") == NULL)
                continue;
            if (owner[i] >= 0)
                MERR("%s: results[%d]: stage %d is also shard %d's", P[k].name, i, i + 1,
                     P[owner[i]].shard);
            owner[i] = k;
        }
        if (owner[i] < 0)
            MERR("merge: stage %d is no shard's (the partial reports disagree on the stages)",
                 i + 1);
    }
    for (int i = 0; i < C->nstages; i++) {
        sp_stage_t *s = &C->stages[i];
        for (int k = 0; k < nparts; k++) {
            json_t *r = json_array_get(P[k].results, (size_t)i);
            const char *st = json_string_value(json_object_get(r, "status"));
            int pending = st && !strcmp(st, "pending");
            if (k != owner[i]) {
                if (!pending)
                    MERR("%s: results[%d]: stage %d is shard %d's, not %d's", P[k].name, i,
                         i + 1, P[owner[i]].shard, P[k].shard);
                continue;
            }
            const char *key = json_string_value(json_object_get(r, "fingerprint"));
            char want[32];
            snprintf(want, sizeof want, "%016" PRIx64, fp[i]);
            if (key == NULL || strcmp(key, want) != 0)
                MERR("%s: results[%d].fingerprint: stage %d differs from this input's (other "
                     "options?)", P[k].name, i, i + 1);
            if (!take_result(s, r, C->nstages, err, errlen, P[k].name))
                goto fail;
            /* a shard memoizes onto its own proved stage of the same key (merge's keys) */
            if (s->memo_of >= 0 && (s->memo_of >= i || owner[s->memo_of] != owner[i] ||
                                    C->stages[s->memo_of].status != SP_STAGE_PROVED ||
                                    C->stages[s->memo_of].key != s->key))
                MERR("%s: results[%d].memo_of: stage %d is no proved stage of the same shard "
                     "and key", P[k].name, i, s->memo_of + 1);
        }
    }
    /* a stage a shard memoized that a whole run proves itself: the kept keys are bounded
       (--max-memo-keys: src/stage.c group_one), and a shard, keying only its own stages, may
       keep a key that a whole run, past the bound, did not (merge's rep[] is the whole run's);
       proved here, on merge's own execution, for the whole run's counts (the review of
       2026-12-04: the 2-layer deepseek3 dp2 tp2 ep2 plan, 104 proved stages in a whole check,
       87 merged) */
    redo = flint_malloc((size_t)(C->nstages ? C->nstages : 1) * sizeof(int));
    for (int pass = 0; pass < 2; pass++) {
        int nredo = 0;
        for (int i = 0; i < C->nstages; i++) {
            sp_stage_t *s = &C->stages[i];
            if (s->status == SP_STAGE_MEMO &&
                (pass == 0 ? rep[i] == i : C->stages[rep[i]].status != SP_STAGE_PROVED))
                redo[nredo++] = i;
        }
        for (int k = 0; k < nredo; k++) {
            sp_stage_t *s = &C->stages[redo[k]];
            s->status = SP_STAGE_PENDING;
            s->memo_of = -1;
            s->elements = s->symmetric = s->prob_bits = 0;
        }
        sp_stages_prove(C, redo, nredo);
    }
    /* memoized as a whole run memoizes: onto the first stage of the same key, when that one
       was proved (a shard proved its own first stage of a key that an earlier shard had) */
    for (int i = 0; i < C->nstages; i++) {
        sp_stage_t *s = &C->stages[i];
        int r = rep[i];
        if (r == i || C->stages[r].status != SP_STAGE_PROVED ||
            (s->status != SP_STAGE_PROVED && s->status != SP_STAGE_MEMO))
            continue;
        s->status = SP_STAGE_MEMO;
        s->memo_of = r;
        s->elements = s->symmetric = s->prob_bits = 0;
    }
    /* a representative asking a proved stage's question with symbols of other roles is
       memoized onto it in a whole run once its own tests pass (src/stage.c sp_stages_solve):
       a proof of it here (a shard's, or the redo's) passed them too */
    for (int i = 0; i < C->nstages; i++) {
        sp_stage_t *s = &C->stages[i];
        if (rep[i] != i || srep[i] == i || s->status != SP_STAGE_PROVED ||
            C->stages[srep[i]].status != SP_STAGE_PROVED)
            continue;
        s->status = SP_STAGE_MEMO;
        s->memo_of = srep[i];
        s->elements = s->symmetric = s->prob_bits = 0;
    }
    for (int i = 0; i < C->nstages; i++) { /* its members, onto the stage it was memoized onto */
        sp_stage_t *s = &C->stages[i];
        if (s->status == SP_STAGE_MEMO && s->memo_of >= 0 &&
            C->stages[s->memo_of].status == SP_STAGE_MEMO)
            s->memo_of = C->stages[s->memo_of].memo_of;
    }
    int failed = 0, unknown = 0;
    for (int i = 0; i < C->nstages; i++) {
        failed += C->stages[i].status == SP_STAGE_FAILED;
        unknown += C->stages[i].status == SP_STAGE_UNKNOWN;
    }
    verdict = failed ? SHARDPROOF_NOT_EQUIVALENT : unknown ? SHARDPROOF_UNKNOWN : SHARDPROOF_EQUIVALENT;
    verdict = (shardproof_verdict_t)sp_crosscheck(C, verdict);
    if (whole_run_decides(C, verdict)) {
        /* the whole input checked here, as `check` would (the report is then its report) */
        sp_diags_mark_t none;
        memset(&none, 0, sizeof none);
        sp_diags_restore(C->d, &none);
        verdict = shardproof_check(C, C->path, text, len);
        C->merged_whole = 1;
    }
fail:
    flint_free(rep);
    flint_free(srep);
    flint_free(owner);
    flint_free(redo);
    flint_free(fp);
    for (int k = 0; k < nparts; k++)
        json_decref(P[k].root);
    flint_free(P);
    C->verdict = verdict;
    return verdict;
}
