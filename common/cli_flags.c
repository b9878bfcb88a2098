/* cli_flags.c — the flag helpers `flashkernel` and `flashkernel-server` share: strict numbers, id lists, devices,
 * the default model, reading a file, the engine's flags. */
#include "cli_flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_int(const char *flag, const char *s, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < min || v > max) {
        fprintf(stderr, "error: %s must be an integer in [%d, %d], got \"%s\"\n", flag, min, max, s);
        return false;
    }
    *out = (int)v;
    return true;
}

bool cli_parse_u64(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *s == '-' || *end || errno) {
        fprintf(stderr, "error: %s must be a non-negative integer below 2^64, got \"%s\"\n", flag, s);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_float(const char *flag, const char *s, float min, float max, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < min || v > max) {
        fprintf(stderr, "error: %s must be a number in [%g, %g], got \"%s\"\n", flag, (double)min, (double)max, s);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_ids(const char *flag, const char *s, int32_t **ids, int *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) {
        fprintf(stderr, "error: out of memory\n");
        return false;
    }
    int count = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long id = strtol(p, &end, 10);
        if (end == p || errno || id < INT32_MIN || id > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, "error: %s must be comma-separated integers like 1,2,3, got \"%s\"\n", flag, s);
            free(v);
            return false;
        }
        v[count++] = (int32_t)id;
        if (!*end)
            break;
        p = end + 1;
    }
    *ids = v;
    *n = count;
    return true;
}

bool cli_parse_device(const char *s, fk_device *out)
{
    if (strcmp(s, "cpu") == 0)
        *out = FK_DEVICE_CPU;
    else if (strcmp(s, "cuda") == 0)
        *out = FK_DEVICE_CUDA;
    else if (strcmp(s, "auto") == 0)
        *out = FK_DEVICE_AUTO;
    else {
        fprintf(stderr, "error: --device must be cpu, cuda or auto, got \"%s\"\n", s);
        return false;
    }
    return true;
}

const char *cli_default_model(void)
{
    const char *env = getenv("FLASHKERNEL_MODEL");
    return env && *env ? env : FK_DEMO_MODEL_DIR;
}

char *cli_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "error: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown, cap *= 2;
        }
    }
    bool failed = !buf || ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "error: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

const struct option cli_engine_options[CLI_ENGINE_OPTION_COUNT] = {
    {"block-size", required_argument, 0, CLI_ENGINE_OPTION_BASE + 0},
    {"num-blocks", required_argument, 0, CLI_ENGINE_OPTION_BASE + 1},
    {"kv-cache-mb", required_argument, 0, CLI_ENGINE_OPTION_BASE + 2},
    {"max-num-seqs", required_argument, 0, CLI_ENGINE_OPTION_BASE + 3},
    {"max-num-batched-tokens", required_argument, 0, CLI_ENGINE_OPTION_BASE + 4},
    {"max-model-len", required_argument, 0, CLI_ENGINE_OPTION_BASE + 5},
    {"gpu-memory-utilization", required_argument, 0, CLI_ENGINE_OPTION_BASE + 6},
    {"no-overlap", no_argument, 0, CLI_ENGINE_OPTION_BASE + 7},
    {"no-mixed-graphs", no_argument, 0, CLI_ENGINE_OPTION_BASE + 8},
    {"decode-graphs", required_argument, 0, CLI_ENGINE_OPTION_BASE + 9},
};

const char cli_engine_usage[] =
    "  --block-size N      tokens per KV cache block (default 16)\n"
    "  --num-blocks N      KV cache blocks (default: as many as --kv-cache-mb holds)\n"
    "  --kv-cache-mb N     KV cache budget in MiB (default: on a GPU what --gpu-memory-utilization leaves,\n"
    "                      on the CPU 512)\n"
    "  --max-num-seqs N    sequences running at once (default 256)\n"
    "  --max-num-batched-tokens N\n"
    "                      tokens per engine step, prefill chunks included (default: 4096 up to 4 billion\n"
    "                      parameters in the blocks, halved per doubling above: 2048 for an 8B model)\n"
    "  --max-model-len N   prompt + output tokens per request (default: the model's context)\n"
    "  --gpu-memory-utilization F\n"
    "                      share of GPU memory to use, weights and KV cache included (default 0.9)\n"
    "  --no-overlap        run engine steps one at a time (default: the host schedules and reports while\n"
    "                      the GPU computes the step before; the tokens are the same)\n"
    "  --no-mixed-graphs   launch every op of steps with prefill chunks (default: on a GPU, up to 512 tokens,\n"
    "                      the parts between attentions replay recorded graphs at a padded token count)\n"
    "  --decode-graphs W   when a GPU records the graphs decode-only steps replay: start (all of them when the\n"
    "                      engine is created; seconds) or first-use (each when a step first needs it, which\n"
    "                      stalls that step ~15 ms for a 1B model) (default: start in flashkernel-server,\n"
    "                      first-use in the other commands)\n";

bool cli_engine_option(int opt, const char *arg, fk_engine_params *ep)
{
    switch (opt - CLI_ENGINE_OPTION_BASE) {
    case 0: return cli_parse_int("--block-size", arg, 1, 1024, &ep->block_size);
    case 1: return cli_parse_int("--num-blocks", arg, 1, 1 << 30, &ep->num_blocks);
    case 2: return cli_parse_int("--kv-cache-mb", arg, 1, 1 << 24, &ep->kv_cache_mb);
    case 3: return cli_parse_int("--max-num-seqs", arg, 1, 65536, &ep->max_num_seqs);
    case 4: return cli_parse_int("--max-num-batched-tokens", arg, 1, 1 << 20, &ep->max_num_batched_tokens);
    case 5: return cli_parse_int("--max-model-len", arg, 1, 1 << 24, &ep->max_model_len);
    case 6: return cli_parse_float("--gpu-memory-utilization", arg, 0.01f, 1, &ep->gpu_memory_utilization);
    case 7: ep->overlap = false; return true;
    case 8: ep->mixed_graphs = false; return true;
    case 9:
        if (strcmp(arg, "start") == 0 || strcmp(arg, "first-use") == 0) {
            ep->decode_graphs_at_start = strcmp(arg, "start") == 0;
            return true;
        }
        fprintf(stderr, "error: --decode-graphs must be start or first-use, got \"%s\"\n", arg);
        return false;
    }
    return false;
}

const struct option cli_model_options[CLI_MODEL_OPTION_COUNT] = {
    {"quantization", required_argument, 0, CLI_MODEL_OPTION_BASE + 0},
    {"quantize-lm-head", no_argument, 0, CLI_MODEL_OPTION_BASE + 1},
};

const char cli_model_usage[] =
    "  --quantization Q    none, int8 or int4: the linear layers' weights, quantized at load (default none;\n"
    "                      int4 needs layer input sizes that are multiples of 128)\n"
    "  --quantize-lm-head  the output head too (default: it stays in the backend's format)\n";

bool cli_model_option(int opt, const char *arg, fk_model_params *mp)
{
    switch (opt - CLI_MODEL_OPTION_BASE) {
    case 0:
        for (fk_quantization q = FK_QUANT_NONE; q <= FK_QUANT_INT4; q++)
            if (strcmp(arg, fk_quantization_name(q)) == 0) {
                mp->quantization = q;
                return true;
            }
        fprintf(stderr, "error: --quantization must be none, int8 or int4, got \"%s\"\n", arg);
        return false;
    case 1: mp->quantize_lm_head = true; return true;
    }
    return false;
}

void cli_describe_weights(const fk_model *m, char *buf, size_t size)
{
    const fk_model_info info = fk_model_get_info(m);
    snprintf(buf, size, "%s%s weights %.1f MiB, loaded in %.2f s", fk_quantization_name(info.quantization),
             info.quantize_lm_head && info.quantization ? " (lm_head too)" : "", (double)info.weight_bytes / 1048576,
             info.load_s);
}
