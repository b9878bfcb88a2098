/* test_engine.c — the continuous-batching engine on the CPU backend: greedy output through the engine equals
 * transformers' (fixtures), and every request gives exactly the tokens it gives alone, whether submitted with 31
 * others at once or staggered over steps, prefilled in chunks, served from the prefix cache, or preempted for
 * lack of KV blocks; a request's own eos ids end it; cancel frees blocks at once; bad parameters are refused and
 * change nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flashkernel.h"
#include "sampler.h"
#include "test_util.h"

enum { MAX_REQ = 64, MAX_OUT = 64 };

/* What the callback saw for one request. */
typedef struct result {
    int32_t tokens[MAX_OUT];
    int n;
    int events;
    fk_finish_reason finish;
    int preemptions, cached_tokens, prompt_tokens, completion_tokens;
    float logprobs[MAX_OUT];
    float top2_gap[MAX_OUT]; /* logprob of the best minus the second best, when top logprobs were asked for */
} result;

static void collect(const fk_token_event *ev, void *user)
{
    result *r = user;
    r->events++;
    assert_int_equal(r->finish, FK_FINISH_NONE); /* nothing after the final event */
    if (ev->token >= 0) {
        assert_true(r->n < MAX_OUT);
        r->logprobs[r->n] = ev->logprob;
        r->top2_gap[r->n] = ev->n_top >= 2 ? ev->top[0].logprob - ev->top[1].logprob : INFINITY;
        r->tokens[r->n++] = ev->token;
    }
    r->finish = ev->finish;
    if (ev->finish != FK_FINISH_NONE) {
        r->preemptions = ev->preemptions;
        r->cached_tokens = ev->cached_tokens;
        r->prompt_tokens = ev->prompt_tokens;
        r->completion_tokens = ev->completion_tokens;
    }
}

typedef struct job {
    int32_t prompt[800];
    int n_prompt;
    fk_request_params params;
    int submit_at_step; /* staggered arrival */
} job;

/* FK_TEST_DEVICE=cuda runs the suite on the GPU (tests/gpu); the default is the CPU. */
static fk_device test_device(void)
{
    const char *d = getenv("FK_TEST_DEVICE");
    return d && !strcmp(d, "cuda") ? FK_DEVICE_CUDA : FK_DEVICE_CPU;
}

static fk_model *load(const char *fixture)
{
    fk_model_params mp = fk_model_params_default();
    mp.device = test_device();
    fk_model *m = NULL;
    fk_error err = {0};
    if (fk_model_load(tu_fixture(fixture), &mp, &m, &err))
        fail_msg("%s", err.message);
    return m;
}

/* Engines a test holds; a failing test jumps past its frees, so the teardown frees what is left (on a GPU an engine
 * holds most of its memory). */
static fk_engine *live[8];

/* FK_TEST_ENGINE_SYNC=1 runs every engine of the suite with steps one at a time (engine_sync, engine_cuda_sync);
 * unset, they overlap (the default). Both modes must pass every test. */
static bool sync_steps_only(void)
{
    const char *v = getenv("FK_TEST_ENGINE_SYNC");
    return v && strcmp(v, "0") != 0;
}

/* An engine with exactly these parameters (the step mode included). */
static fk_engine *engine_as_given(fk_model *m, fk_engine_params ep)
{
    fk_engine *e = NULL;
    fk_error err = {0};
    if (test_device() == FK_DEVICE_CUDA && !ep.num_blocks && !ep.kv_cache_mb)
        ep.kv_cache_mb = 1024; /* a test needs little; the automatic size would take most of the GPU */
    if (fk_engine_create(m, &ep, &e, &err))
        fail_msg("%s", err.message);
    for (int i = 0; i < 8; i++)
        if (!live[i]) {
            live[i] = e;
            break;
        }
    return e;
}

/* An engine in the suite's step mode. */
static fk_engine *engine(fk_model *m, fk_engine_params ep)
{
    if (sync_steps_only())
        ep.overlap = false;
    return engine_as_given(m, ep);
}

static void engine_free(fk_engine *e)
{
    for (int i = 0; i < 8; i++)
        if (live[i] == e)
            live[i] = NULL;
    fk_engine_free(e);
}

static int free_live_engines(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++) {
        fk_engine_free(live[i]);
        live[i] = NULL;
    }
    return 0;
}

/* Runs jobs to completion, submitting each at its step; checks that no block is left in use. */
static void run(fk_engine *e, const job *jobs, int n, result *out)
{
    memset(out, 0, (size_t)n * sizeof *out);
    int submitted = 0;
    fk_error err = {0};
    for (int step = 0; submitted < n || fk_engine_has_work(e); step++) {
        for (int i = 0; i < n; i++)
            if (jobs[i].submit_at_step == step) {
                fk_request_params p = jobs[i].params;
                p.on_token = collect;
                p.user = &out[i];
                uint64_t id;
                if (fk_engine_submit(e, jobs[i].prompt, jobs[i].n_prompt, &p, &id, &err))
                    fail_msg("%s", err.message);
                submitted++;
            }
        if (fk_engine_step(e, &err))
            fail_msg("%s", err.message);
        fk_engine_stats st = fk_engine_get_stats(e);
        assert_int_equal(st.blocks_used + st.blocks_free + st.blocks_cached, st.blocks_total);
        assert_true(step < 100000);
    }
    fk_engine_stats st = fk_engine_get_stats(e);
    assert_int_equal(st.blocks_used, 0);
    assert_int_equal(st.running + st.waiting, 0);
    for (int i = 0; i < n; i++)
        assert_int_not_equal(out[i].finish, FK_FINISH_NONE);
}

/* 32 random prompts of 1 to 300 tokens (some sharing a 40-token prefix), greedy, 20 tokens, EOS ignored. */
static void make_jobs(job *jobs, int n, int vocab, uint64_t *rng)
{
    int32_t shared[40];
    for (int i = 0; i < 40; i++)
        shared[i] = (int32_t)tu_below(rng, (uint32_t)vocab);
    for (int i = 0; i < n; i++) {
        job *j = &jobs[i];
        j->n_prompt = 1 + (int)tu_below(rng, 300);
        for (int t = 0; t < j->n_prompt; t++)
            j->prompt[t] = i % 3 == 0 && t < 40 ? shared[t] : (int32_t)tu_below(rng, (uint32_t)vocab);
        j->params = fk_request_params_default();
        j->params.max_tokens = 20;
        j->params.ignore_eos = true;
        j->submit_at_step = 0;
    }
}

/* On the CPU every request gives exactly its solo tokens. On the GPU the batch changes the order of fp16 sums
 * (cuBLAS picks kernels by batch size; decode splits and kernels depend on the batch), so a request must match
 * its solo run up to the first step where the solo run's two best tokens were within 0.02 in log-probability:
 * there either may come out on top, and what follows depends on it. */
#define GPU_NEAR_TIE 0.02f

static void assert_same_tokens(const result *solo, const result *b, int n, const char *what)
{
    int diverged = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(solo[i].n, b[i].n);
        for (int k = 0; k < solo[i].n; k++) {
            if (test_device() == FK_DEVICE_CUDA && solo[i].top2_gap[k] < GPU_NEAR_TIE) {
                diverged += memcmp(solo[i].tokens + k, b[i].tokens + k, (size_t)(solo[i].n - k) * 4) != 0;
                break;
            }
            if (solo[i].tokens[k] != b[i].tokens[k])
                fail_msg("%s: request %d, token %d is %d, %d in its solo run", what, i, k, b[i].tokens[k],
                         solo[i].tokens[k]);
        }
    }
    if (test_device() == FK_DEVICE_CUDA)
        printf("%s: %d of %d requests diverged after a near tie (< %.2f)\n", what, diverged, n, (double)GPU_NEAR_TIE);
}

/* Each request alone in a fresh engine. On the GPU, greedy solo runs also report the top-2 logprobs, which
 * assert_same_tokens uses to find near ties. */
static void run_solo(fk_model *m, const job *jobs, int n, result *out)
{
    for (int i = 0; i < n; i++) {
        fk_engine *e = engine(m, fk_engine_params_default());
        job j = jobs[i];
        j.submit_at_step = 0;
        if (test_device() == FK_DEVICE_CUDA && j.params.sampling.temperature == 0 && j.params.sampling.logprobs < 0)
            j.params.sampling.logprobs = 2;
        run(e, &j, 1, &out[i]);
        engine_free(e);
    }
}

static void batch_invariance(const char *fixture)
{
    uint64_t rng = tu_seed();
    fk_model *m = load(fixture);
    const int vocab = fk_model_get_info(m).vocab_size, n = 32;
    static job jobs[32];
    static result solo[32], together[32], staggered[32], chunked[32], squeezed[32];
    make_jobs(jobs, n, vocab, &rng);
    run_solo(m, jobs, n, solo);

    /* A budget below the prompts' total (the default takes them all in one step), so that the later prompts find
     * the earlier ones' shared prefixes cached. */
    fk_engine_params ep = fk_engine_params_default();
    ep.max_num_batched_tokens = 2048;
    fk_engine *e = engine(m, ep);
    run(e, jobs, n, together);
    assert_same_tokens(solo, together, n, "submitted together");
    /* The shared prefixes were served from the prefix cache. */
    fk_engine_stats st = fk_engine_get_stats(e);
    assert_true(st.prefix_hit_tokens > 0);
    for (int i = 0; i < n; i++)
        jobs[i].submit_at_step = (int)tu_below(&rng, 40);
    run(e, jobs, n, staggered);
    assert_same_tokens(solo, staggered, n, "staggered");
    engine_free(e);

    /* Chunked prefill: a 37-token budget splits every long prompt across steps. */
    ep = fk_engine_params_default();
    ep.max_num_batched_tokens = 37;
    ep.enable_prefix_caching = false;
    e = engine(m, ep);
    run(e, jobs, n, chunked);
    assert_same_tokens(solo, chunked, n, "chunked prefill");
    assert_int_equal(fk_engine_get_stats(e).prefix_hit_tokens, 0);
    engine_free(e);

    /* Preemption: a pool that holds about three requests at a time; with the prefix cache (preempted requests
     * get their own blocks back) and without it (true recompute). */
    for (int caching = 1; caching >= 0; caching--) {
        ep = fk_engine_params_default();
        ep.max_model_len = 400;
        ep.num_blocks = 70; /* 16-token blocks: a 320-token request needs 20 */
        ep.max_num_batched_tokens = 512;
        ep.enable_prefix_caching = caching;
        e = engine(m, ep);
        for (int i = 0; i < n; i++)
            jobs[i].submit_at_step = 0;
        run(e, jobs, n, squeezed);
        assert_same_tokens(solo, squeezed, n, caching ? "preempted, prefix cache on" : "preempted, prefix cache off");
        int preempted = 0;
        for (int i = 0; i < n; i++)
            preempted += squeezed[i].preemptions;
        assert_true(preempted > 0);
        assert_int_equal((uint64_t)preempted, fk_engine_get_stats(e).preemptions);
        printf("%s: 32 requests; %d preemptions with 70 blocks, prefix cache %s\n", fixture, preempted,
               caching ? "on" : "off");
        engine_free(e);
    }
    fk_model_free(m);
}

static void test_batch_invariance_llama(void **state)
{
    (void)state;
    batch_invariance("models/tiny-llama3");
}

static void test_batch_invariance_gpt2(void **state)
{
    (void)state;
    batch_invariance("models/tiny-gpt2");
}

/* Decode graphs recorded when the engine is created (decode_graphs_at_start) replay what recording on first use
 * would: staggered requests of varying lengths, whose decode steps meet many sequence counts (each padded to its
 * bucket on a GPU), give the same tokens both ways. On a GPU the engine that recorded them at start records none
 * while it runs, and the other records at most as many; the CPU has no graphs. */
static void test_decode_graphs_at_start(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    fk_model *m = load("models/tiny-llama3");
    enum { N = 48 };
    static job jobs[N];
    static result got[2][N];
    make_jobs(jobs, N, fk_model_get_info(m).vocab_size, &rng);
    for (int i = 0; i < N; i++) {
        jobs[i].params.max_tokens = 1 + (int)tu_below(&rng, 40);
        jobs[i].submit_at_step = (int)tu_below(&rng, 60);
    }
    int graphs[2][2]; /* [at start?][after creation, after the run] */
    for (int at_start = 0; at_start < 2; at_start++) {
        fk_engine_params ep = fk_engine_params_default();
        ep.max_model_len = 512;
        ep.max_num_batched_tokens = 128;
        ep.decode_graphs_at_start = at_start;
        fk_engine *e = engine(m, ep);
        graphs[at_start][0] = fk_engine_get_stats(e).decode_graphs;
        run(e, jobs, N, got[at_start]);
        graphs[at_start][1] = fk_engine_get_stats(e).decode_graphs;
        engine_free(e);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(got[0][i].n, got[1][i].n);
        assert_memory_equal(got[0][i].tokens, got[1][i].tokens, (size_t)got[0][i].n * sizeof(int32_t));
    }
    printf("decode graphs: %d recorded at start, %d on first use\n", graphs[1][0], graphs[0][1]);
    if (test_device() == FK_DEVICE_CPU) {
        assert_int_equal(graphs[0][1] + graphs[1][1], 0);
    } else {
        assert_int_equal(graphs[0][0], 0);
        assert_true(graphs[0][1] > 0 && graphs[0][1] <= graphs[1][0]);
        assert_true(graphs[1][0] > graphs[0][1]);
        assert_int_equal(graphs[1][1], graphs[1][0]);
    }
    fk_model_free(m);
}

/* got against transformers' greedy tokens `want`: equal on the CPU; on the GPU equal up to the first token where
 * got's two best were within GPU_NEAR_TIE (fp16 sums in another order may pick the other). */
static void assert_reference_tokens(const result *got, const cJSON *want, const char *what, int i)
{
    assert_int_equal(got->n, cJSON_GetArraySize(want));
    int k = 0;
    for (const cJSON *t = want->child; t; t = t->next, k++) {
        if (test_device() == FK_DEVICE_CUDA && got->top2_gap[k] < GPU_NEAR_TIE)
            return;
        if (got->tokens[k] != t->valueint)
            fail_msg("%s case %d token %d: %d, transformers gives %d", what, i, k, got->tokens[k], t->valueint);
    }
}

/* Greedy continuations through the engine, the reference prompts arriving a step apart (so most steps mix
 * decodes with a prefill), against transformers; with the pieces of those steps replayed from graphs and with every
 * op launched (the same on the CPU, which has no graphs). On the GPU the graphs must cut the launches. */
static void test_reference_greedy_through_engine(void **state)
{
    (void)state;
    const char *fixtures[2] = {"models/tiny-llama3", "models/tiny-gpt2"};
    for (int f = 0; f < 2; f++) {
        char path[256];
        snprintf(path, sizeof path, "%s/reference.json", fixtures[f]);
        cJSON *ref = tu_read_json(tu_fixture(path));
        fk_model *m = load(fixtures[f]);
        static job jobs[8];
        static result got[8];
        int n = 0;
        for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c; c = c->next, n++) {
            jobs[n].n_prompt = 0;
            for (const cJSON *t = cJSON_GetObjectItem(c, "prompt_ids")->child; t; t = t->next)
                jobs[n].prompt[jobs[n].n_prompt++] = t->valueint;
            jobs[n].params = fk_request_params_default();
            jobs[n].params.max_tokens = 24;
            jobs[n].params.ignore_eos = true;
            if (test_device() == FK_DEVICE_CUDA)
                jobs[n].params.sampling.logprobs = 2; /* the top-2 gap, for near ties */
            jobs[n].submit_at_step = n;
        }
        double per_step[2];
        for (int mixed = 1; mixed >= 0; mixed--) {
            fk_engine_params ep = fk_engine_params_default();
            ep.mixed_graphs = mixed;
            fk_engine *e = engine(m, ep);
            run(e, jobs, n, got);
            int i = 0;
            for (const cJSON *c = cJSON_GetObjectItem(ref, "cases")->child; c; c = c->next, i++) {
                assert_int_equal(got[i].finish, FK_FINISH_LENGTH);
                assert_reference_tokens(&got[i], cJSON_GetObjectItem(c, "greedy_24"), fixtures[f], i);
            }
            const fk_engine_stats st = fk_engine_get_stats(e);
            assert_true(st.prefill_steps > 0 && st.decode_steps > 0);
            assert_int_equal(st.prefill_steps + st.decode_steps, st.steps);
            per_step[mixed] = (double)st.prefill_launches / st.prefill_steps;
            engine_free(e);
        }
        /* Per step with prefill chunks, eagerly: the embedding, ~8 ops per layer, the head, sampling. Replayed: a
         * graph between attentions (layers + 1), the attentions, at most gather, head and sampling: 7 of 19 (Llama:
         * the embedding with the first norm) or 20 for these 2-layer models; the 700-token prompt's step is above the
         * largest bucket and runs every op. */
        const int layers = fk_model_get_info(m).n_layers;
        printf("%s: launches per step with prefill chunks: %.1f with graphs, %.1f without\n", fixtures[f],
               per_step[1], per_step[0]);
        assert_true(per_step[0] >= 7.0 * layers);
        if (test_device() == FK_DEVICE_CUDA)
            assert_true(per_step[1] <= 0.6 * per_step[0]);
        else
            assert_true(per_step[1] == per_step[0]);
        fk_model_free(m);
        cJSON_Delete(ref);
    }
}

/* The three shakespeare-llama prompts: 64 greedy tokens each, EOS honoured, equal to transformers'. */
static void test_shakespeare_greedy_through_engine(void **state)
{
    (void)state;
    if (test_device() == FK_DEVICE_CUDA)
        skip();
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    fk_model *m = load("models/shakespeare-llama");
    static job jobs[3];
    static result got[3];
    int n = 0;
    for (const cJSON *g = cJSON_GetObjectItem(ref, "greedy")->child; g; g = g->next, n++) {
        jobs[n].n_prompt = 0;
        for (const cJSON *t = cJSON_GetObjectItem(g, "prompt_ids")->child; t; t = t->next)
            jobs[n].prompt[jobs[n].n_prompt++] = t->valueint;
        jobs[n].params = fk_request_params_default();
        jobs[n].params.max_tokens = 64;
        jobs[n].submit_at_step = 0;
    }
    fk_engine *e = engine(m, fk_engine_params_default());
    run(e, jobs, n, got);
    int i = 0;
    for (const cJSON *g = cJSON_GetObjectItem(ref, "greedy")->child; g; g = g->next, i++) {
        const cJSON *want = cJSON_GetObjectItem(g, "greedy_64");
        assert_int_equal(got[i].n, 64);
        assert_int_equal(got[i].finish, FK_FINISH_LENGTH);
        int k = 0;
        for (const cJSON *t = want->child; t; t = t->next, k++)
            assert_int_equal(got[i].tokens[k], t->valueint);
    }
    engine_free(e);
    fk_model_free(m);
    cJSON_Delete(ref);
}

/* A request's own eos_ids (a chat template's end-of-turn token) end it as the model's eos does: at the first one
 * generated, with finish eos and no text for it; ignore_eos goes past them; ids outside the vocabulary are refused. */
static void test_request_eos_ids(void **state)
{
    (void)state;
    if (test_device() == FK_DEVICE_CUDA)
        skip();
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    const cJSON *g = cJSON_GetObjectItem(ref, "greedy")->child;
    static job j;
    j.n_prompt = 0;
    for (const cJSON *t = cJSON_GetObjectItem(g, "prompt_ids")->child; t; t = t->next)
        j.prompt[j.n_prompt++] = t->valueint;
    int32_t want[64];
    int n_want = 0;
    for (const cJSON *t = cJSON_GetObjectItem(g, "greedy_64")->child; t; t = t->next)
        want[n_want++] = t->valueint;
    /* The stop id: a token of the reference past its first few; the request must end at its first occurrence. */
    uint64_t rng = tu_seed();
    const int32_t stop = want[4 + (int)tu_below(&rng, (uint32_t)(n_want - 4))];
    int first = 0;
    while (want[first] != stop)
        first++;
    fk_model *m = load("models/shakespeare-llama");
    fk_engine *e = engine(m, fk_engine_params_default());
    j.params = fk_request_params_default();
    j.params.max_tokens = 64;
    j.params.eos_ids[0] = 1; /* the model's own eos id again: harmless */
    j.params.eos_ids[1] = stop;
    j.params.n_eos = 2;
    result r;
    run(e, &j, 1, &r);
    assert_int_equal(r.finish, FK_FINISH_EOS);
    assert_int_equal(r.n, first + 1);
    assert_memory_equal(r.tokens, want, (size_t)r.n * sizeof *want);
    j.params.ignore_eos = true;
    run(e, &j, 1, &r);
    assert_int_equal(r.finish, FK_FINISH_LENGTH);
    assert_int_equal(r.n, 64);
    fk_request_params p = fk_request_params_default();
    uint64_t id;
    fk_error err = {0};
    p.n_eos = 1;
    p.eos_ids[0] = 2048;
    assert_int_equal(fk_engine_submit(e, j.prompt, j.n_prompt, &p, &id, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "eos id 2048 is out of vocabulary (2048)"));
    p.n_eos = FK_MAX_EOS_IDS + 1;
    assert_int_equal(fk_engine_submit(e, j.prompt, j.n_prompt, &p, &id, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "at most 8 eos_ids, got 9"));
    assert_false(fk_engine_has_work(e));
    engine_free(e);
    fk_model_free(m);
    cJSON_Delete(ref);
}

/* Streamed text. */
typedef struct text_result {
    char text[4096];
    size_t len;
    int events;
    fk_finish_reason finish;
} text_result;

static void collect_text(const fk_token_event *ev, void *user)
{
    text_result *t = user;
    assert_non_null(ev->text);
    assert_true(t->len + ev->text_len < sizeof t->text);
    memcpy(t->text + t->len, ev->text, ev->text_len);
    t->len += ev->text_len;
    t->text[t->len] = '\0';
    t->events++;
    t->finish = ev->finish;
}

/* The shakespeare-llama prompts' streamed text equals transformers' decoded greedy continuation; a stop string that
 * spans tokens ends the text just before it, with finish "stop". */
static void test_text_and_stop_strings(void **state)
{
    (void)state;
    cJSON *ref = tu_read_json(tu_fixture("models/shakespeare-llama/reference.json"));
    fk_model *m = load("models/shakespeare-llama");
    fk_engine *e = engine(m, fk_engine_params_default());
    fk_error err = {0};
    for (const cJSON *g = cJSON_GetObjectItem(ref, "greedy")->child; g; g = g->next) {
        int32_t ids[64];
        int n = 0;
        for (const cJSON *t = cJSON_GetObjectItem(g, "prompt_ids")->child; t; t = t->next)
            ids[n++] = t->valueint;
        /* transformers' text; on the GPU fp16 may leave it at a near tie, so there the run's own text is used */
        const char *want = cJSON_GetObjectItem(g, "greedy_64_text")->valuestring;
        text_result plain = {0};
        for (int with_stop = 0; with_stop < 2; with_stop++) {
            text_result t = {0};
            char stop[8];
            const char *stops[1] = {stop};
            fk_request_params rp = fk_request_params_default();
            rp.max_tokens = 64;
            rp.on_token = collect_text;
            rp.user = &t;
            if (with_stop) {
                /* A stop string across a token boundary: 6 bytes from the middle of the text. */
                memcpy(stop, plain.text + plain.len / 2 - 3, 6);
                stop[6] = '\0';
                rp.stop = stops, rp.n_stop = 1;
            }
            uint64_t id;
            if (fk_engine_submit(e, ids, n, &rp, &id, &err))
                fail_msg("%s", err.message);
            while (fk_engine_has_work(e))
                assert_int_equal(fk_engine_step(e, &err), FK_OK);
            if (!with_stop) {
                if (test_device() == FK_DEVICE_CPU)
                    assert_string_equal(t.text, want);
                assert_int_equal(t.finish, FK_FINISH_LENGTH);
                plain = t;
            } else {
                const size_t end = (size_t)(strstr(plain.text, stop) - plain.text);
                assert_int_equal(t.len, end);
                assert_memory_equal(t.text, plain.text, end);
                assert_int_equal(t.finish, FK_FINISH_STOP);
                assert_true(t.events < 64);
            }
        }
    }
    assert_int_equal(fk_engine_get_stats(e).blocks_used, 0);
    engine_free(e);
    fk_model_free(m);
    cJSON_Delete(ref);
}

/* Whether job j's first draw sits at a boundary of the sampling rule (a top-k / top-p / min-p cut or the edge of a
 * token's share of the draw): some perturbation of its logits by up to +-amplitude picks another token with the
 * same draw. The logits are the model-level API's, the rule and the draw the sampler's. */
static bool first_draw_at_boundary(fk_model *m, const job *j, float amplitude, uint64_t *noise)
{
    const int V = fk_model_get_info(m).vocab_size;
    float *logits = malloc((size_t)V * sizeof *logits), *moved = malloc((size_t)V * sizeof *moved);
    sampler *smp = NULL;
    fk_error err = {0};
    assert_non_null(logits);
    assert_non_null(moved);
    assert_int_equal(sampler_create(V, &smp, &err), FK_OK);
    assert_int_equal(fk_model_logits(m, j->prompt, j->n_prompt, false, logits, &err), FK_OK);
    const fk_sampling_params *sp = &j->params.sampling;
    rng first, draw;
    rng_seed(&first, sp->seed);
    draw = first;
    const int32_t picked = sampler_sample(smp, logits, sp, j->prompt, j->n_prompt, j->n_prompt, &draw);
    bool at_boundary = false;
    for (int trial = 0; trial < 64 && !at_boundary; trial++) {
        for (int v = 0; v < V; v++)
            moved[v] = logits[v] + tu_uniform(noise, -amplitude, amplitude);
        draw = first;
        at_boundary = sampler_sample(smp, moved, sp, j->prompt, j->n_prompt, j->n_prompt, &draw) != picked;
    }
    sampler_destroy(smp);
    free(moved);
    free(logits);
    return at_boundary;
}

/* Sampled requests: the same seed gives the same tokens alone and in a batch; logprobs match the model's
 * log-softmax computed by the model-level API. */
static void test_seeded_sampling_and_logprobs(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    fk_model *m = load("models/tiny-llama3");
    static job jobs[8];
    static result solo[8], together[8];
    make_jobs(jobs, 8, 4096, &rng);
    for (int i = 0; i < 8; i++) {
        fk_sampling_params *sp = &jobs[i].params.sampling;
        sp->temperature = 0.9f;
        sp->top_p = 0.95f;
        sp->top_k = 50;
        sp->min_p = 0.01f;
        sp->repetition_penalty = 1.1f;
        sp->presence_penalty = 0.3f;
        sp->frequency_penalty = 0.2f;
        sp->seed = rng + (uint64_t)i;
        sp->logprobs = 3;
    }
    run_solo(m, jobs, 8, solo);
    fk_engine *e = engine(m, fk_engine_params_default());
    run(e, jobs, 8, together);
    if (test_device() == FK_DEVICE_CPU) {
        assert_same_tokens(solo, together, 8, "seeded sampling");
    } else {
        /* fp16 sums depend on the batch, so a draw may land on the other side of a boundary later on; the same
         * batch again must be exact, and every first token (one draw from almost the same logits) must agree unless
         * that draw sits at a boundary of the sampling rule. "Again" runs in a fresh engine: in `e` the prefix cache
         * would shorten its prefills, a different batch. */
        static result again[8];
        fk_engine *fresh = engine(m, fk_engine_params_default());
        run(fresh, jobs, 8, again);
        engine_free(fresh);
        for (int i = 0; i < 8; i++) {
            assert_int_equal(again[i].n, together[i].n);
            assert_memory_equal(again[i].tokens, together[i].tokens, (size_t)together[i].n * 4);
            if (solo[i].tokens[0] == together[i].tokens[0])
                continue;
            /* the logits of one request differ between batch compositions by up to the suite's near tie (the
             * logprob check below allows 3e-2): a draw that noise of that size moves may come out either way */
            if (!first_draw_at_boundary(m, &jobs[i], GPU_NEAR_TIE, &rng)) {
                float flips = 0; /* how far from a boundary it is: the least amplitude tried that moves it */
                for (float a = 2 * GPU_NEAR_TIE; a <= 1.0f && !flips; a *= 2)
                    flips = first_draw_at_boundary(m, &jobs[i], a, &rng) ? a : 0;
                fail_msg("request %d: first token %d alone, %d in a batch, and its draw is not at a boundary (logit "
                         "noise of +-%.2f moves it, +-%.2f does not)", i, solo[i].tokens[0], together[i].tokens[0],
                         (double)flips, (double)GPU_NEAR_TIE);
            }
            printf("seeded sampling: request %d's first draw sits at a boundary: %d alone, %d in a batch\n", i,
                   solo[i].tokens[0], together[i].tokens[0]);
        }
    }
    engine_free(e);
    /* logprob of the k-th token = log-softmax of the logits after prompt + tokens[0..k-1] */
    const job *j = &jobs[0];
    int32_t ctx[1024];
    memcpy(ctx, j->prompt, (size_t)j->n_prompt * sizeof *ctx);
    float *logits = malloc(4096 * sizeof(float));
    fk_error err = {0};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(fk_model_logits(m, ctx, j->n_prompt + k, false, logits, &err), FK_OK);
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < 4096; v++)
            mx = fmax(mx, logits[v]);
        for (int v = 0; v < 4096; v++)
            sum += exp(logits[v] - mx);
        double want = logits[together[0].tokens[k]] - mx - log(sum);
        /* fp16 logits on the GPU: a few thousandths of a logit apart between batch compositions */
        assert_true(fabs(together[0].logprobs[k] - want) < (test_device() == FK_DEVICE_CPU ? 1e-3 : 3e-2));
        ctx[j->n_prompt + k] = together[0].tokens[k];
    }
    free(logits);
    fk_model_free(m);
}

static uint64_t submit(fk_engine *e, const job *j, result *out)
{
    fk_request_params p = j->params;
    p.on_token = collect;
    p.user = out;
    uint64_t id;
    fk_error err = {0};
    if (fk_engine_submit(e, j->prompt, j->n_prompt, &p, &id, &err))
        fail_msg("%s", err.message);
    return id;
}

/* 64 mixed requests (greedy and sampled, prompts of 1 to 300 tokens partly shared, 1 to 40 tokens out, staggered
 * arrival, chunked prefill) give the same tokens with overlapped steps as with steps one at a time.
 * A: no early finishes and a pool that never runs short: both modes compute the same batches, so the tokens must be
 * identical on every device. B: stop strings and eos ids end requests early (the overlapped engine then computes one
 * step for them that it drops), and a small pool and max_num_seqs make admission and preemption depend on when
 * blocks come back: identical on the CPU; on the GPU the batches differ, so greedy requests must agree up to a near
 * tie of a synchronous run that reports the top-2 logprobs, and sampled ones are only counted. */
static void test_overlapped_steps_equal_sync(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    fk_model *m = load("models/shakespeare-llama");
    const int n = 64;
    static job jobs[64];
    static result sync_run[64], overlapped[64];
    const char *stops[3] = {"e", "th", "\n"};
    make_jobs(jobs, n, fk_model_get_info(m).vocab_size, &rng);
    for (int part = 0; part < 2; part++) {
        for (int i = 0; i < n; i++) {
            fk_request_params *p = &jobs[i].params;
            *p = fk_request_params_default();
            p->max_tokens = 1 + (int)tu_below(&rng, 40);
            p->ignore_eos = part == 0;
            if (i % 2) {
                p->sampling.temperature = 0.8f;
                p->sampling.top_p = i % 4 == 1 ? 0.9f : 1.0f;
                p->sampling.top_k = i % 4 == 3 ? 40 : 0;
                p->sampling.min_p = i % 8 == 5 ? 0.05f : 0;
                p->sampling.seed = rng + (uint64_t)i;
            }
            if (part == 1 && i % 3 == 0) {
                p->stop = stops + i % 2;
                p->n_stop = 2;
            } else if (part == 1 && i % 3 == 1) {
                p->eos_ids[0] = (int32_t)tu_below(&rng, 64); /* a frequent (low) id: ends some requests early */
                p->n_eos = 1;
            }
            jobs[i].submit_at_step = (int)tu_below(&rng, 30);
        }
        fk_engine_params ep = fk_engine_params_default();
        ep.max_num_batched_tokens = 64;
        if (part == 1) {
            ep.max_model_len = 400;
            ep.num_blocks = 60; /* 16-token blocks: a 340-token request needs 22 */
            ep.max_num_seqs = 24;
        }
        static job traced[64];
        memcpy(traced, jobs, sizeof traced);
        const bool gaps = part == 1 && test_device() == FK_DEVICE_CUDA;
        for (int i = 0; gaps && i < n; i++)
            if (traced[i].params.sampling.temperature == 0)
                traced[i].params.sampling.logprobs = 2; /* the top-2 gap, for near ties */
        for (int overlap = 0; overlap < 2; overlap++) {
            ep.overlap = overlap;
            fk_engine *e = engine_as_given(m, ep);
            memset(overlap ? overlapped : sync_run, 0, sizeof sync_run);
            run(e, overlap ? jobs : traced, n, overlap ? overlapped : sync_run);
            engine_free(e);
        }
        int finished_early = 0, diverged = 0, preempted = 0;
        for (int i = 0; i < n; i++) {
            const result *a = &sync_run[i], *b = &overlapped[i];
            finished_early += a->finish != FK_FINISH_LENGTH;
            preempted += b->preemptions;
            if (part == 0 || test_device() == FK_DEVICE_CPU) {
                assert_int_equal(a->n, b->n);
                assert_memory_equal(a->tokens, b->tokens, (size_t)a->n * sizeof *a->tokens);
                assert_int_equal(a->finish, b->finish);
                assert_int_equal(a->completion_tokens, b->completion_tokens);
                continue;
            }
            int k = 0;
            while (k < a->n && k < b->n && a->tokens[k] == b->tokens[k])
                k++;
            if (k == a->n && k == b->n && a->finish == b->finish)
                continue;
            diverged++;
            if (jobs[i].params.sampling.temperature == 0 && k < a->n && a->top2_gap[k] >= GPU_NEAR_TIE)
                fail_msg("part B: greedy request %d, token %d is %d overlapped, %d one step at a time (top-2 gap %.3f)",
                         i, k, k < b->n ? b->tokens[k] : -1, a->tokens[k], (double)a->top2_gap[k]);
        }
        printf("overlapped vs one at a time, part %c: %d requests, %d ended early, %d preemptions overlapped, %d "
               "diverged after a near tie\n", 'A' + part, n, finished_early, preempted, diverged);
        if (part == 1) /* the cases that make the modes' batches differ did occur */
            assert_true(finished_early > 0 && preempted > 0);
    }
    fk_model_free(m);
}

static void test_cancel_frees_blocks_at_once(void **state)
{
    (void)state;
    fk_model *m = load("models/tiny-llama3");
    fk_engine_params ep = fk_engine_params_default();
    ep.max_num_batched_tokens = 64; /* a 300-token prompt takes 5 steps */
    fk_engine *e = engine(m, ep);
    static job j;
    j.n_prompt = 300;
    for (int i = 0; i < 300; i++)
        j.prompt[i] = i;
    j.params = fk_request_params_default();
    j.params.max_tokens = 50;
    fk_error err = {0};
    result r = {0};

    /* while waiting */
    uint64_t id = submit(e, &j, &r);
    assert_int_equal(fk_engine_get_stats(e).waiting, 1);
    assert_int_equal(fk_engine_cancel(e, id, &err), FK_OK);
    assert_int_equal(r.finish, FK_FINISH_CANCEL);
    assert_int_equal(fk_engine_get_stats(e).waiting, 0);
    assert_false(fk_engine_has_work(e));

    /* during prefill */
    memset(&r, 0, sizeof r);
    id = submit(e, &j, &r);
    assert_int_equal(fk_engine_step(e, &err), FK_OK);
    assert_int_equal(fk_engine_step(e, &err), FK_OK);
    assert_true(fk_engine_get_stats(e).blocks_used > 0);
    assert_int_equal(r.n, 0);
    assert_int_equal(fk_engine_cancel(e, id, &err), FK_OK);
    assert_int_equal(fk_engine_get_stats(e).blocks_used, 0);
    assert_int_equal(r.finish, FK_FINISH_CANCEL);

    /* during decode */
    memset(&r, 0, sizeof r);
    id = submit(e, &j, &r);
    while (r.n < 3)
        assert_int_equal(fk_engine_step(e, &err), FK_OK);
    assert_int_equal(fk_engine_cancel(e, id, &err), FK_OK);
    assert_int_equal(fk_engine_get_stats(e).blocks_used, 0);
    assert_int_equal(r.finish, FK_FINISH_CANCEL);
    assert_int_equal(r.completion_tokens, 3);

    /* unknown and already finished ids */
    assert_int_equal(fk_engine_cancel(e, id, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "unknown request id"));
    assert_int_equal(fk_engine_cancel(e, 987654, &err), FK_ERR_INVALID_ARGUMENT);
    engine_free(e);
    fk_model_free(m);
}

/* Each bad request is refused with a message naming the field, and leaves the engine as it was. */
static void test_bad_requests_change_nothing(void **state)
{
    (void)state;
    fk_model *m = load("models/tiny-gpt2"); /* 1024 positions */
    fk_engine *e = engine(m, fk_engine_params_default());
    int32_t ok[3] = {1, 2, 3}, bad_id[2] = {1, 4096}, neg[1] = {-3};
    static int32_t long_prompt[1100];
    const char *empty_stop[1] = {""};
    typedef struct bad_case {
        const char *name;
        const int32_t *prompt;
        int n;
        fk_request_params p;
        const char *needle;
    } bad_case;
    bad_case cases[20];
    int n = 0;
#define CASE(prompt_, n_, field, value, needle_)                                                                   \
    do {                                                                                                           \
        cases[n] = (bad_case){#field, prompt_, n_, fk_request_params_default(), needle_};                         \
        cases[n].p.field = value;                                                                                  \
        n++;                                                                                                       \
    } while (0)
    CASE(ok, 0, max_tokens, 16, "prompt cannot be empty");
    CASE(bad_id, 2, max_tokens, 16, "Token id 4096 is out of vocabulary");
    CASE(neg, 1, max_tokens, 16, "Token id -3 is out of vocabulary");
    CASE(long_prompt, 1100, max_tokens, 16, "prompt has 1100 tokens; maximum context length is 1024");
    CASE(ok, 3, max_tokens, 0, "max_tokens must be at least 1, got 0");
    CASE(ok, 3, max_tokens, -1, "max_tokens must be at least 1, got -1");
    CASE(ok, 3, max_tokens, 1022, "requested 3 + 1022 tokens exceeds context length 1024");
    CASE(ok, 3, sampling.temperature, -0.5f, "temperature must be in [0, 2], got -0.5");
    CASE(ok, 3, sampling.temperature, NAN, "temperature must be a finite number");
    CASE(ok, 3, sampling.temperature, INFINITY, "temperature must be a finite number");
    CASE(ok, 3, sampling.top_p, 0, "top_p must be in (0, 1], got 0");
    CASE(ok, 3, sampling.top_p, 2, "top_p must be in (0, 1], got 2");
    CASE(ok, 3, sampling.top_k, -5, "top_k must be >= 0, got -5");
    CASE(ok, 3, sampling.min_p, 1.5f, "min_p must be in [0, 1], got 1.5");
    CASE(ok, 3, sampling.repetition_penalty, 0, "repetition_penalty must be in (0, 2], got 0");
    CASE(ok, 3, sampling.presence_penalty, -3, "presence_penalty must be in [-2, 2], got -3");
    CASE(ok, 3, sampling.logprobs, 21, "logprobs must be in [0, 20], got 21");
    CASE(ok, 3, n_stop, 1, "stop strings need a tokenizer"); /* tiny-gpt2 has no tokenizer.json */
    CASE(ok, 3, n_stop, 5, "at most 4 stop sequences");
#undef CASE
    cases[n - 2].p.stop = empty_stop;
    fk_engine_stats before = fk_engine_get_stats(e);
    for (int i = 0; i < n; i++) {
        uint64_t id = 77;
        fk_error err = {0};
        fk_status s = fk_engine_submit(e, cases[i].prompt, cases[i].n, &cases[i].p, &id, &err);
        if (s != FK_ERR_INVALID_ARGUMENT || !strstr(err.message, cases[i].needle))
            fail_msg("case %d (%s): status %d, message \"%s\"; expected \"%s\"", i, cases[i].name, s, err.message,
                     cases[i].needle);
        assert_int_equal(id, 77);
    }
    fk_engine_stats after = fk_engine_get_stats(e);
    assert_int_equal(after.waiting, before.waiting);
    assert_int_equal(after.running, before.running);
    assert_int_equal(after.blocks_free, before.blocks_free);
    assert_int_equal(after.prompt_tokens, before.prompt_tokens);
    /* A top_k past the vocabulary is allowed: all of it. And the engine still serves. */
    static job j;
    j.n_prompt = 3;
    memcpy(j.prompt, ok, sizeof ok);
    j.params = fk_request_params_default();
    j.params.sampling.top_k = 1000000000;
    j.params.sampling.temperature = 1;
    result r;
    run(e, &j, 1, &r);
    assert_int_equal(r.n, 16);
    engine_free(e);
    fk_model_free(m);
}

/* The fault test hook: after N steps the device fails; every request gets a final FK_FINISH_ERROR event, the step
 * reports FK_ERR_DEVICE, and the engine refuses work from then on. */
static void test_device_fault_fails_every_request(void **state)
{
    (void)state;
    if (getenv("FK_TEST_UNDER_SANITIZER")) { /* the injected fault is a deliberate illegal access: memcheck's finding */
        fprintf(stderr, "skipped under compute-sanitizer: the fault is a deliberate out-of-bounds write\n");
        skip();
    }
    fk_model *m = load("models/tiny-gpt2");
    fk_engine_params ep = fk_engine_params_default();
    ep.fault_after_steps = 3;
    ep.max_num_batched_tokens = 16; /* a waiting request and a prefill in progress when the fault comes */
    fk_engine *e = engine(m, ep);
    static job jobs[3];
    static result r[3];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 3; i++) {
        jobs[i].n_prompt = 20;
        for (int t = 0; t < 20; t++)
            jobs[i].prompt[t] = (int32_t)(i * 100 + t);
        jobs[i].params = fk_request_params_default();
        jobs[i].params.max_tokens = 30;
        submit(e, &jobs[i], &r[i]);
    }
    fk_error err = {0};
    fk_status s = FK_OK;
    for (int step = 0; step < 10 && !s; step++)
        s = fk_engine_step(e, &err);
    assert_int_equal(s, FK_ERR_DEVICE);
    assert_non_null(strstr(err.message, "engine failed"));
    for (int i = 0; i < 3; i++)
        assert_int_equal(r[i].finish, FK_FINISH_ERROR);
    fk_engine_stats st = fk_engine_get_stats(e);
    assert_true(st.failed);
    assert_int_equal(st.running + st.waiting, 0);
    assert_int_equal(st.blocks_used, 0);
    uint64_t id;
    assert_int_equal(fk_engine_submit(e, jobs[0].prompt, 3, &jobs[0].params, &id, &err), FK_ERR_DEVICE);
    assert_int_equal(fk_engine_step(e, &err), FK_ERR_DEVICE);
    engine_free(e);
    fk_model_free(m);
}

/* The step profile: every step is counted once, as decode-only or with prefill chunks; each op class that ran has
 * time, and no step's op times exceed its wall time; each step's ops are those of a Llama block (per layer two
 * norms, layer 0's first with the embedding, four linears, one attention; then the final norm, the head and the
 * sampling; RoPE + KV store apart from attention only in steps with prefill chunks), also where decode passes replay
 * graphs between eager passes; profiling changes no token. */
static void test_profile_accounts_every_step(void **state)
{
    (void)state;
    fk_model *m = load("models/tiny-llama3");
    static job jobs[6];
    static result plain[6], profiled[6];
    uint64_t rng = tu_seed();
    for (int i = 0; i < 6; i++) {
        jobs[i].n_prompt = 5 + (int)tu_below(&rng, 60);
        for (int k = 0; k < jobs[i].n_prompt; k++)
            jobs[i].prompt[k] = (int32_t)tu_below(&rng, 4000);
        jobs[i].params = fk_request_params_default();
        jobs[i].params.max_tokens = 4 + (int)tu_below(&rng, 12);
        jobs[i].params.ignore_eos = true;
        jobs[i].submit_at_step = 2 * i;
    }
    fk_engine *e = engine(m, fk_engine_params_default());
    run(e, jobs, 6, plain);
    fk_step_profile off[2];
    fk_engine_get_profile(e, off);
    assert_int_equal(off[FK_PROFILE_DECODE].steps + off[FK_PROFILE_PREFILL].steps, 0); /* off by default */
    engine_free(e);

    fk_engine_params ep = fk_engine_params_default();
    ep.profile = true;
    e = engine(m, ep);
    run(e, jobs, 6, profiled);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(profiled[i].n, plain[i].n);
        assert_memory_equal(profiled[i].tokens, plain[i].tokens, (size_t)plain[i].n * sizeof(int32_t));
    }
    fk_step_profile p[2];
    fk_engine_get_profile(e, p);
    const fk_engine_stats st = fk_engine_get_stats(e);
    assert_int_equal(p[FK_PROFILE_DECODE].steps + p[FK_PROFILE_PREFILL].steps, st.steps);
    for (int k = 0; k < 2; k++) {
        assert_true(p[k].steps > 0);
        assert_true(p[k].sequences >= p[k].steps);
        double ops = 0;
        for (int c = 0; c < FK_OP_CLASSES; c++) {
            assert_true(p[k].op_s[c] >= 0);
            ops += p[k].op_s[c];
        }
        assert_true(p[k].op_s[FK_OP_LINEAR] > 0 && p[k].op_s[FK_OP_ATTENTION] > 0 && p[k].op_s[FK_OP_NORM] > 0);
        assert_true(ops <= p[k].wall_s * 1.01 + 1e-4); /* device time lies within the steps' wall time */
    }
    const uint64_t L = (uint64_t)fk_model_get_info(m).n_layers;
    uint64_t n = p[FK_PROFILE_DECODE].steps;
    const uint64_t *dec = p[FK_PROFILE_DECODE].ops, *pre = p[FK_PROFILE_PREFILL].ops;
    assert_int_equal(dec[FK_OP_LINEAR], (4 * L + 1) * n);
    assert_int_equal(dec[FK_OP_ATTENTION], L * n);
    assert_int_equal(dec[FK_OP_NORM], (2 * L + 1) * n);
    assert_int_equal(dec[FK_OP_SAMPLING], n);
    /* The embedding goes with layer 0's norm1 (an RMSNorm model): no other op, one logits row per sequence in order */
    assert_int_equal(dec[FK_OP_OTHER], 0);
    n = p[FK_PROFILE_PREFILL].steps;
    assert_int_equal(pre[FK_OP_ATTENTION], L * n);
    /* the final norm and the head only in steps with logits */
    assert_true(pre[FK_OP_LINEAR] >= 4 * L * n && pre[FK_OP_LINEAR] <= (4 * L + 1) * n);
    assert_true(pre[FK_OP_NORM] >= 2 * L * n && pre[FK_OP_NORM] <= (2 * L + 1) * n);
    assert_true(pre[FK_OP_OTHER] >= L * n); /* RoPE + KV store per layer, row gathers */
    assert_string_equal(fk_op_class_name(FK_OP_LINEAR), "linears");
    assert_string_equal(fk_op_class_name(FK_OP_CLASSES), "unknown");
    engine_free(e);
    fk_model_free(m);
}

static void test_bad_engine_params(void **state)
{
    (void)state;
    fk_model *m = load("models/tiny-llama3"); /* 131072 positions */
    fk_engine *e = (fk_engine *)0x1;
    fk_error err = {0};
    fk_engine_params ep = fk_engine_params_default();
    ep.kv_cache_mb = 1; /* 1 MiB holds 1024 tokens of this model; one max-length sequence needs 128 MiB */
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "cannot hold one sequence of max_model_len 131072"));
    assert_null(e);
    ep.max_model_len = 1024; /* now it fits */
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_OK);
    engine_free(e);
    ep = fk_engine_params_default();
    ep.block_size = 0;
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "block_size"));
    ep = fk_engine_params_default();
    ep.max_model_len = 200000;
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "max_model_len must be in [0, 131072]"));
    ep = fk_engine_params_default();
    ep.max_num_batched_tokens = -1;
    assert_int_equal(fk_engine_create(m, &ep, &e, &err), FK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "max_num_batched_tokens must be in [0, 1048576] (0: from the model's size)"));
    /* FK_PDL_EARLY, the A/B switch of the ops that release the next kernel early (model_forward.c): a mask of 4 bits */
    const char *bad_masks[] = {"16", "-1", "3x", "o"};
    for (size_t i = 0; i < sizeof bad_masks / sizeof bad_masks[0]; i++) {
        setenv("FK_PDL_EARLY", bad_masks[i], 1);
        ep = fk_engine_params_default();
        ep.max_model_len = 1024;
        e = (fk_engine *)0x1;
        const fk_status s = fk_engine_create(m, &ep, &e, &err);
        unsetenv("FK_PDL_EARLY");
        assert_int_equal(s, FK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(err.message, "FK_PDL_EARLY"));
        assert_null(e);
    }
    /* The default budget (0) follows the blocks' parameters: this model's 2 layers of width 128 are far below the
     * 4 billion above which it halves. */
    assert_int_equal(fk_engine_params_default().max_num_batched_tokens, 0);
    assert_int_equal(fk_default_batched_tokens(m), 4096);
    fk_model_free(m);
}

int main(void)
{
    if (test_device() == FK_DEVICE_CUDA) {
        fk_model_params mp = fk_model_params_default();
        mp.device = FK_DEVICE_CUDA;
        fk_model *m = NULL;
        if (fk_model_load(tu_fixture("models/tiny-gpt2"), &mp, &m, NULL) == FK_ERR_DEVICE) {
            fprintf(stderr, "skipped: no CUDA device\n");
            return 77;
        }
        fk_model_free(m);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_reference_greedy_through_engine, free_live_engines),
        cmocka_unit_test_teardown(test_shakespeare_greedy_through_engine, free_live_engines),
        cmocka_unit_test_teardown(test_batch_invariance_llama, free_live_engines),
        cmocka_unit_test_teardown(test_batch_invariance_gpt2, free_live_engines),
        cmocka_unit_test_teardown(test_seeded_sampling_and_logprobs, free_live_engines),
        cmocka_unit_test_teardown(test_text_and_stop_strings, free_live_engines),
        cmocka_unit_test_teardown(test_request_eos_ids, free_live_engines),
        cmocka_unit_test_teardown(test_overlapped_steps_equal_sync, free_live_engines),
        cmocka_unit_test_teardown(test_decode_graphs_at_start, free_live_engines),
        cmocka_unit_test_teardown(test_cancel_frees_blocks_at_once, free_live_engines),
        cmocka_unit_test_teardown(test_bad_requests_change_nothing, free_live_engines),
        cmocka_unit_test_teardown(test_bad_engine_params, free_live_engines),
        cmocka_unit_test_teardown(test_profile_accounts_every_step, free_live_engines),
        /* last: on the GPU the injected fault is sticky and spoils this process's CUDA context for good */
        cmocka_unit_test_teardown(test_device_fault_fails_every_request, free_live_engines),
    };
    /* FK_TEST_FILTER=test_batch_* runs only the matching tests (e.g. one per compute-sanitizer process). */
    if (getenv("FK_TEST_FILTER"))
        cmocka_set_test_filter(getenv("FK_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
