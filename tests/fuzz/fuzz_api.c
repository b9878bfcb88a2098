/* fuzz_api.c — libFuzzer harness for one API family's request bodies (built three times: FUZZ_API_KIND is
 * API_GENERATE, API_COMPLETIONS or API_CHAT): the input is a POST body, taken through what routes.c does with it —
 * api_parse_body, api_parse_generation, the prompt (chat_prompt renders the messages with the demo model's chat
 * template; a text prompt is tokenized), api_check_prompt — and, when all of that accepts it, submitted to a CPU engine
 * over the demo model (then cancelled before any step).
 *
 * Checks: a refusal is a 400 (404 for a model that is not served; 500 only when memory runs out) whose body is one
 * strict JSON object {"error": {"message", "type", "param", "code"}} with the same code and a non-empty, valid UTF-8
 * message; an accepted request has 1 to max_model_len prompt ids inside the vocabulary, room for its max_tokens
 * (>= 1) in the context, every sampling value in its documented range, at most 4 stop strings of 1 to 256 bytes of
 * valid UTF-8, eos ids inside the vocabulary — and the engine accepts it: the API never lets through what the engine
 * then refuses. A failed check aborts (libFuzzer keeps the input). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "chat.h"
#include "flashkernel.h"
#include "fuzz_files.h"
#include "json.h"
#include "utf8.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fk_model *model;
static fk_engine *engine;
static chat *chat_side;
static api_limits lim = {.model_name = "demo-model"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fk_error err = {0};
    fk_model_params mp = fk_model_params_default();
    mp.device = FK_DEVICE_CPU;
    CHECK(fk_model_load(FK_DEMO_MODEL_DIR, &mp, &model, &err) == FK_OK, "%s", err.message);
    fk_engine_params ep = fk_engine_params_default();
    ep.max_num_seqs = 4;
    CHECK(fk_engine_create(model, &ep, &engine, &err) == FK_OK, "%s", err.message);
    lim.vocab_size = fk_model_get_info(model).vocab_size;
    lim.max_model_len = fk_model_get_info(model).max_context;
    chat_side = chat_create(FK_DEMO_MODEL_DIR, NULL, NULL, NULL, model);
    CHECK(chat_side, "out of memory");
    return 0;
}

/* A refusal: its status is one of the documented ones and its body is the documented JSON. */
static void check_refusal(const api_error *e, bool may_404)
{
    CHECK(e->status == 400 || e->status == 500 || (may_404 && e->status == 404), "status %d: %s", e->status,
          e->message);
    const size_t n = strlen(e->message);
    CHECK(n > 0 && utf8_check(e->message, n) == n, "message \"%s\"", e->message);
    size_t len = 0;
    char *body = api_error_body(e, &len);
    CHECK(body, "out of memory rendering an error");
    cJSON *root = NULL;
    fk_error err = {0};
    CHECK(json_parse(body, len, "error body", &root, &err) == FK_OK, "%s: %.300s", err.message, body);
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "code");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(error, "message");
    CHECK(cJSON_IsNumber(code) && code->valueint == e->status && cJSON_IsString(message) &&
              cJSON_IsString(cJSON_GetObjectItemCaseSensitive(error, "type")),
          "error body %.300s", body);
    cJSON_Delete(root);
    free(body);
}

static void check_accepted(const api_generation *g, const int32_t *ids, int n)
{
    const fk_request_params *p = &g->params;
    const fk_sampling_params *s = &p->sampling;
    CHECK(n >= 1 && n <= lim.max_model_len, "%d prompt ids", n);
    for (int i = 0; i < n; i++)
        CHECK(ids[i] >= 0 && ids[i] < lim.vocab_size, "prompt id %d", ids[i]);
    CHECK(p->max_tokens >= 1 && (long long)n + p->max_tokens <= lim.max_model_len, "%d + max_tokens %d", n,
          p->max_tokens);
    CHECK(s->temperature >= 0 && s->temperature <= 2, "temperature %g", s->temperature);
    CHECK(s->top_p > 0 && s->top_p <= 1, "top_p %g", s->top_p);
    CHECK(s->top_k >= 0 && s->top_k <= lim.vocab_size, "top_k %d", s->top_k);
    CHECK(s->min_p >= 0 && s->min_p <= 1, "min_p %g", s->min_p);
    CHECK(s->repetition_penalty > 0 && s->repetition_penalty <= 2, "repetition_penalty %g", s->repetition_penalty);
    CHECK(fabsf(s->presence_penalty) <= 2 && fabsf(s->frequency_penalty) <= 2, "penalties %g %g",
          s->presence_penalty, s->frequency_penalty);
    CHECK(s->logprobs >= -1 && s->logprobs <= FK_MAX_LOGPROBS, "logprobs %d", s->logprobs);
    CHECK(!g->seed_given || s->seed <= (uint64_t)API_MAX_SEED, "seed %llu", (unsigned long long)s->seed);
    CHECK(p->n_stop >= 0 && p->n_stop <= FK_MAX_STOP, "%d stop strings", p->n_stop);
    for (int i = 0; i < p->n_stop; i++) {
        const size_t len = strlen(g->stop[i]);
        CHECK(len >= 1 && len <= FK_MAX_STOP_BYTES && utf8_check(g->stop[i], len) == len, "stop string %d", i);
    }
    CHECK(p->n_eos >= 0 && p->n_eos <= FK_MAX_EOS_IDS, "%d eos ids", p->n_eos);
    for (int i = 0; i < p->n_eos; i++)
        CHECK(p->eos_ids[i] >= 0 && p->eos_ids[i] < lim.vocab_size, "eos id %d", p->eos_ids[i]);

    /* What the route hands the engine: the stop strings are copied there, here they point into the tree. */
    fk_request_params submit = *p;
    submit.stop = g->stop;
    uint64_t id;
    fk_error err = {0};
    CHECK(fk_engine_submit(engine, ids, n, &submit, &id, &err) == FK_OK, "the engine refuses what the API took: %s",
          err.message);
    CHECK(fk_engine_cancel(engine, id, &err) == FK_OK, "%s", err.message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = NULL;
    api_error e = {0};
    if (!api_parse_body((const char *)data, size, &root, &e)) {
        check_refusal(&e, false);
        return 0;
    }
    api_generation g;
    int32_t *ids = NULL;
    int n = 0;
    bool ok = api_parse_generation(root, FUZZ_API_KIND, &lim, &g, &e);
    if (!ok) {
        check_refusal(&e, FUZZ_API_KIND != API_GENERATE);
        cJSON_Delete(root);
        return 0;
    }
    ids = g.prompt_ids;
    n = g.n_prompt_ids;
    if (FUZZ_API_KIND == API_CHAT) {
        ok = chat_prompt(chat_side, &g, &ids, &n, &e);
    } else if (g.prompt_text) {
        fk_error err = {0};
        CHECK(fk_tokenizer_encode(fk_model_tokenizer(model), g.prompt_text, g.prompt_text_len, true, &ids, &n, &err) ==
                  FK_OK,
              "a prompt the parser took does not tokenize: %s", err.message);
    }
    if (ok)
        ok = api_check_prompt(&g, n, &lim, &e);
    if (ok)
        check_accepted(&g, ids, n);
    else
        check_refusal(&e, false);
    if (ids != g.prompt_ids)
        fk_free(ids);
    api_generation_free(&g);
    cJSON_Delete(root);
    return 0;
}
