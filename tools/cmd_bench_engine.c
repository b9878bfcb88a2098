/* cmd_bench_engine.c — `flashkernel bench-engine`: N random requests submitted at once, run to completion through
 * the engine; prints throughput and how the engine got there (steps, prefix-cache hit rate, preemptions). */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashkernel bench-engine [--model DIR] --requests N --prompt-len P --max-tokens M\n"
            "                                [--shared-prefix K] [--warmup W] [--seed S] [--profile] [engine options]\n"
            "                                [--device cpu|cuda|auto] [--threads N] [--quantization none|int8|int4]\n"
            "                                [--quantize-lm-head]\n"
            "\n"
            "Submits N requests of P random token ids (the first K the same in all) at once, generates M tokens\n"
            "each (greedy, end-of-sequence ignored) and prints requests, steps, tokens/s and the prefix-cache hit\n"
            "rate, and the device launches per step the host issued (backend ops and graph replays). First W\n"
            "requests (default 1) of the same shape run untimed, so that one-time costs (loading kernels, library\n"
            "set-up, recording the first graphs) stay out of the numbers.\n"
            "--profile times every op of the timed steps (device events around each op on a GPU, wall time on the\n"
            "CPU) and prints, for decode steps and for steps with prefill chunks, the time per step of each op class\n"
            "(linears, attention, norms, sampling, other kernels) and of the host (the rest of the step's wall\n"
            "time), with their shares, and how many ops of each class a step ran. Profiling adds a little time to\n"
            "every op.\n"
            "%s%s"
            "Exit status: 0 ok, 1 model or runtime error, 2 bad usage.\n",
            cli_engine_usage, cli_model_usage);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

enum { OPT_MODEL = 1, OPT_REQUESTS, OPT_PROMPT_LEN, OPT_MAX_TOKENS, OPT_SHARED, OPT_SEED, OPT_DEVICE, OPT_THREADS,
       OPT_WARMUP, OPT_PROFILE, OPT_HELP };

/* One kind of step's profile: what each op class and the host took per step, and their shares of the step. */
static void print_profile(const char *kind, const fk_step_profile *p)
{
    if (!p->steps)
        return;
    printf("profile: %s, %llu steps of %.1f sequences on average, %.3f ms per step\n", kind,
           (unsigned long long)p->steps, (double)p->sequences / p->steps, p->wall_s * 1e3 / p->steps);
    printf("  %-14s %12s %7s %13s\n", "op class", "ms per step", "share", "ops per step");
    double device = 0;
    for (int c = 0; c < FK_OP_CLASSES; c++) {
        device += p->op_s[c];
        printf("  %-14s %12.4f %6.1f%% %13.1f\n", fk_op_class_name((fk_op_class)c), p->op_s[c] * 1e3 / p->steps,
               100 * p->op_s[c] / p->wall_s, (double)p->ops[c] / p->steps);
    }
    const double host = p->wall_s - device;
    printf("  %-14s %12.4f %6.1f%%\n", "host", host * 1e3 / p->steps, 100 * host / p->wall_s);
}

int cmd_bench_engine(int argc, char **argv)
{
    static struct option options[11 + CLI_ENGINE_OPTION_COUNT + CLI_MODEL_OPTION_COUNT + 1] = {
        {"model", required_argument, 0, OPT_MODEL},        {"requests", required_argument, 0, OPT_REQUESTS},
        {"prompt-len", required_argument, 0, OPT_PROMPT_LEN}, {"max-tokens", required_argument, 0, OPT_MAX_TOKENS},
        {"shared-prefix", required_argument, 0, OPT_SHARED}, {"seed", required_argument, 0, OPT_SEED},
        {"device", required_argument, 0, OPT_DEVICE},      {"threads", required_argument, 0, OPT_THREADS},
        {"warmup", required_argument, 0, OPT_WARMUP}, {"profile", no_argument, 0, OPT_PROFILE},
        {"help", no_argument, 0, OPT_HELP},
    };
    for (int i = 0; i < CLI_ENGINE_OPTION_COUNT; i++)
        options[11 + i] = cli_engine_options[i];
    for (int i = 0; i < CLI_MODEL_OPTION_COUNT; i++)
        options[11 + CLI_ENGINE_OPTION_COUNT + i] = cli_model_options[i];
    const char *model_dir = cli_default_model();
    int n_requests = 0, prompt_len = 0, max_tokens = 0, shared = 0, warmup = 1, opt;
    uint64_t seed = 1;
    fk_model_params mp = fk_model_params_default();
    fk_engine_params ep = fk_engine_params_default();
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case OPT_MODEL: model_dir = optarg; break;
        case OPT_REQUESTS: ok = cli_parse_int("--requests", optarg, 1, 1 << 20, &n_requests); break;
        case OPT_PROMPT_LEN: ok = cli_parse_int("--prompt-len", optarg, 1, 1 << 24, &prompt_len); break;
        case OPT_MAX_TOKENS: ok = cli_parse_int("--max-tokens", optarg, 1, 1 << 24, &max_tokens); break;
        case OPT_SHARED: ok = cli_parse_int("--shared-prefix", optarg, 0, 1 << 24, &shared); break;
        case OPT_SEED: ok = cli_parse_u64("--seed", optarg, &seed); break;
        case OPT_WARMUP: ok = cli_parse_int("--warmup", optarg, 0, 1 << 20, &warmup); break;
        case OPT_DEVICE: ok = cli_parse_device(optarg, &mp.device); break;
        case OPT_THREADS: ok = cli_parse_int("--threads", optarg, 1, 4096, &mp.n_threads); break;
        case OPT_PROFILE: ep.profile = true; break;
        case OPT_HELP: usage(stdout); return EXIT_OK;
        default:
            ok = opt >= CLI_MODEL_OPTION_BASE ? cli_model_option(opt, optarg, &mp)
                                              : opt >= CLI_ENGINE_OPTION_BASE && cli_engine_option(opt, optarg, &ep);
        }
        if (!ok) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc || !n_requests || !prompt_len || !max_tokens || shared > prompt_len) {
        fprintf(stderr, "error: --requests, --prompt-len and --max-tokens are required; --shared-prefix <= "
                        "--prompt-len\n");
        usage(stderr);
        return EXIT_USAGE;
    }

    fk_model *m = cli_load_model(model_dir, &mp);
    fk_engine *e = m ? cli_create_engine(m, &ep) : NULL;
    int32_t *prompt = malloc((size_t)prompt_len * sizeof *prompt);
    int rc = EXIT_RUNTIME;
    if (!e || !prompt)
        goto done;
    const int vocab = fk_model_get_info(m).vocab_size;
    uint64_t rng = seed | 1;
    fk_request_params rp = fk_request_params_default();
    rp.max_tokens = max_tokens;
    rp.ignore_eos = true;
    fk_error err = {0};
    /* Warm-up: requests of the same shape with prompts of their own (no prefix in common with the timed ones). */
    for (int r = 0; r < warmup; r++) {
        for (int i = 0; i < prompt_len; i++)
            prompt[i] = (int32_t)(next_random(&rng) % (uint64_t)vocab);
        uint64_t id;
        if (fk_engine_submit(e, prompt, prompt_len, &rp, &id, &err)) {
            fprintf(stderr, "error: %s\n", err.message);
            goto done;
        }
    }
    while (fk_engine_has_work(e))
        if (fk_engine_step(e, &err)) {
            fprintf(stderr, "error: %s\n", err.message);
            goto done;
        }
    const fk_engine_stats before = fk_engine_get_stats(e);
    fk_step_profile prof_before[2];
    fk_engine_get_profile(e, prof_before);
    for (int i = 0; i < prompt_len; i++)
        prompt[i] = (int32_t)(next_random(&rng) % (uint64_t)vocab);
    uint64_t shared_rng = rng;
    for (int r = 0; r < n_requests; r++) {
        for (int i = shared; i < prompt_len; i++)
            prompt[i] = (int32_t)(next_random(&shared_rng) % (uint64_t)vocab);
        uint64_t id;
        if (fk_engine_submit(e, prompt, prompt_len, &rp, &id, &err)) {
            fprintf(stderr, "error: %s\n", err.message);
            goto done;
        }
    }
    const double t0 = cli_now();
    double last_report = t0;
    while (fk_engine_has_work(e)) {
        if (fk_engine_step(e, &err)) {
            fprintf(stderr, "error: %s\n", err.message);
            goto done;
        }
        if (cli_now() - last_report > 2) {
            fk_engine_stats st = fk_engine_get_stats(e);
            fprintf(stderr, "... step %llu: %d running, %d waiting, %llu tokens generated\n",
                    (unsigned long long)st.steps, st.running, st.waiting, (unsigned long long)st.generation_tokens);
            last_report = cli_now();
        }
    }
    const double elapsed = cli_now() - t0;
    fk_engine_stats st = fk_engine_get_stats(e); /* the timed requests alone: */
    st.steps -= before.steps, st.prompt_tokens -= before.prompt_tokens;
    st.generation_tokens -= before.generation_tokens, st.preemptions -= before.preemptions;
    st.prefix_hit_tokens -= before.prefix_hit_tokens, st.prefix_query_tokens -= before.prefix_query_tokens;
    st.decode_launches -= before.decode_launches, st.decode_steps -= before.decode_steps;
    st.prefill_launches -= before.prefill_launches, st.prefill_steps -= before.prefill_steps;
    char weights[128];
    cli_describe_weights(m, weights, sizeof weights);
    printf("device            %s\n", fk_model_get_info(m).device);
    printf("weights           %s\n", weights);
    printf("requests          %d\n", n_requests);
    printf("steps             %llu\n", (unsigned long long)st.steps);
    printf("prompt tokens     %llu\n", (unsigned long long)st.prompt_tokens);
    printf("output tokens     %llu\n", (unsigned long long)st.generation_tokens);
    printf("elapsed           %.3f s\n", elapsed);
    printf("output tokens/s   %.1f\n", st.generation_tokens / elapsed);
    printf("total tokens/s    %.1f\n", (st.generation_tokens + st.prompt_tokens - st.prefix_hit_tokens) / elapsed);
    printf("prefix-cache hits %.1f%% (%llu of %llu prompt tokens)\n",
           st.prefix_query_tokens ? 100.0 * st.prefix_hit_tokens / st.prefix_query_tokens : 0.0,
           (unsigned long long)st.prefix_hit_tokens, (unsigned long long)st.prefix_query_tokens);
    printf("preemptions       %llu\n", (unsigned long long)st.preemptions);
    printf("launches per step %.1f in %llu decode steps, %.1f in %llu steps with prefill chunks\n",
           st.decode_steps ? (double)st.decode_launches / st.decode_steps : 0.0, (unsigned long long)st.decode_steps,
           st.prefill_steps ? (double)st.prefill_launches / st.prefill_steps : 0.0,
           (unsigned long long)st.prefill_steps);
    if (ep.profile) { /* the timed steps alone */
        fk_step_profile prof[2];
        fk_engine_get_profile(e, prof);
        for (int k = 0; k < 2; k++) {
            prof[k].steps -= prof_before[k].steps, prof[k].sequences -= prof_before[k].sequences;
            prof[k].wall_s -= prof_before[k].wall_s;
            for (int c = 0; c < FK_OP_CLASSES; c++)
                prof[k].op_s[c] -= prof_before[k].op_s[c], prof[k].ops[c] -= prof_before[k].ops[c];
        }
        print_profile("decode steps", &prof[FK_PROFILE_DECODE]);
        print_profile("steps with prefill chunks", &prof[FK_PROFILE_PREFILL]);
    }
    rc = EXIT_OK;
done:
    free(prompt);
    fk_engine_free(e);
    fk_model_free(m);
    return rc;
}
