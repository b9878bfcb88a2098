/* test_model_forward.c — model_forward's checks of a batch before it enqueues anything (CPU backend, tiny-llama3):
 * a batch that fits runs; token ids outside the vocabulary, placeholders beyond the previous pass's sampled tokens,
 * logit rows outside the batch and more tokens than the workspace holds are refused with FK_ERR_INVALID_ARGUMENT.
 * The engine makes every batch itself; these checks keep a bad one from reading out of bounds on the device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "batch.h"
#include "kv_cache.h"
#include "model.h"
#include "test_util.h"

enum { MAX_TOKENS = 8, MAX_SEQS = 2, MAX_BLOCKS = 2, MAX_LOGITS = 2, BLOCK_SIZE = 16 };

typedef struct {
    fk_model *m;
    forward_ws *ws;
    kv_cache *kv;
    uint64_t rng; /* seeded once, so that FK_TEST_SEED replays the whole run */
} fixture;

static int setup(void **state)
{
    static fixture f;
    fk_model_params p = fk_model_params_default();
    p.device = FK_DEVICE_CPU;
    fk_error err = {0};
    f.rng = tu_seed();
    if (fk_model_load(tu_fixture("models/tiny-llama3"), &p, &f.m, &err) ||
        forward_ws_create(f.m, MAX_TOKENS, MAX_SEQS, MAX_BLOCKS, MAX_LOGITS, false, false, false, &f.ws, &err) ||
        kv_cache_create(f.m->be, f.m->cfg.n_layers, MAX_SEQS * MAX_BLOCKS, BLOCK_SIZE, f.m->cfg.n_kv_heads,
                        f.m->cfg.head_dim, &f.kv, &err)) {
        fprintf(stderr, "setup: %s\n", err.message);
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kv_cache_free(f->kv);
    forward_ws_free(f->m, f->ws);
    fk_model_free(f->m);
    return 0;
}

/* One sequence's prefill of n tokens at positions 0 .. n - 1 in block 0, the logits of its last token. */
typedef struct {
    int32_t ids[MAX_TOKENS + 1], positions[MAX_TOKENS + 1], slots[MAX_TOKENS + 1];
    int32_t query_start[2], context_len[1], block_tables[MAX_BLOCKS], logit_rows[1];
    batch b;
} one_sequence;

static void prefill(one_sequence *q, int n, int vocab, uint64_t *rng)
{
    for (int i = 0; i < n; i++) {
        q->ids[i] = (int32_t)tu_below(rng, (uint64_t)vocab);
        q->positions[i] = i;
        q->slots[i] = i;
    }
    q->query_start[0] = 0, q->query_start[1] = n;
    q->context_len[0] = n;
    q->block_tables[0] = 0, q->block_tables[1] = 1;
    q->logit_rows[0] = n - 1;
    q->b = (batch){.n_tokens = n, .n_seqs = 1, .max_blocks = MAX_BLOCKS, .n_logits = 1, .input_ids = q->ids,
                   .positions = q->positions, .slot_mapping = q->slots, .query_start = q->query_start,
                   .context_len = q->context_len, .block_tables = q->block_tables, .logit_rows = q->logit_rows};
}

/* model_forward refuses q's batch, naming `what` in its message. */
static void refused(fixture *f, one_sequence *q, const char *what)
{
    fk_error err = {0};
    assert_int_equal(model_forward(f->m, f->ws, f->kv, &q->b, &err), FK_ERR_INVALID_ARGUMENT);
    if (!strstr(err.message, what))
        fail_msg("message \"%s\" does not name \"%s\"", err.message, what);
}

static void test_batch_checks(void **state)
{
    fixture *f = *state;
    const int vocab = f->m->cfg.vocab_size;
    one_sequence q;
    fk_error err = {0};
    prefill(&q, 5, vocab, &f->rng);
    if (model_forward(f->m, f->ws, f->kv, &q.b, &err))
        fail_msg("a batch that fits: %s", err.message);

    prefill(&q, 5, vocab, &f->rng);
    q.ids[3] = vocab; /* one past the vocabulary */
    refused(f, &q, "id");
    q.ids[3] = -1 - MAX_LOGITS; /* a placeholder for a row the previous pass did not have */
    refused(f, &q, "placeholder");
    q.ids[3] = INT32_MIN;
    refused(f, &q, "placeholder");

    prefill(&q, 5, vocab, &f->rng);
    q.logit_rows[0] = 5; /* the batch's tokens are 0 .. 4 */
    refused(f, &q, "logit row");
    q.logit_rows[0] = -1;
    refused(f, &q, "logit row");

    prefill(&q, MAX_TOKENS, vocab, &f->rng);
    q.b.n_tokens = q.query_start[1] = q.context_len[0] = MAX_TOKENS + 1;
    q.ids[MAX_TOKENS] = 0, q.positions[MAX_TOKENS] = MAX_TOKENS, q.slots[MAX_TOKENS] = MAX_TOKENS;
    refused(f, &q, "exceeds the workspace");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_batch_checks)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
