/* cmd_make_model.c — `flashkernel make-model`: a Hugging Face model directory of a real model's shapes with random
 * weights, so benchmarks need no download: config.json, generation_config.json, model.safetensors (shards of at
 * most 4 GiB plus model.safetensors.index.json when larger), and a byte-level BPE tokenizer.json whose merges fill
 * the vocabulary. Weights are uniform with the variance of N(0, (1.5 / sqrt(fan_in))^2), norm scales 1 +- 0.2:
 * logits and attention come out far from uniform, as in the test fixtures. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "fp16.h"

typedef struct preset {
    const char *name, *arch;
    int vocab, hidden, inter, layers, heads, kv_heads, max_pos;
    double rope_theta;
    bool llama3_rope, tied;
} preset;

static const preset presets[] = {
    {"llama-3.2-1b", "llama", 128256, 2048, 8192, 16, 32, 8, 131072, 500000.0, true, true},
    {"llama-2-7b", "llama", 32000, 4096, 11008, 32, 32, 32, 4096, 10000.0, false, false},
    {"llama-3-8b", "llama", 128256, 4096, 14336, 32, 32, 8, 8192, 500000.0, false, false},
    {"gpt2-124m", "gpt2", 50257, 768, 3072, 12, 12, 12, 1024, 0, false, true},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flashkernel make-model --arch llama|gpt2 --preset NAME [--dtype f16|bf16] [--seed S] --out DIR\n"
               "\n"
               "Writes a Hugging Face model directory of a real model's shapes with random weights and a byte-level\n"
               "tokenizer.json. Presets: llama-3.2-1b, llama-2-7b, llama-3-8b (--arch llama), gpt2-124m\n"
               "(--arch gpt2).\n"
               "Exit status: 0 ok, 1 write error, 2 bad usage.\n");
}

/* ---- tensors ---- */

typedef struct tensor {
    char name[96];
    int ndim;
    long long shape[2];
    long long fan_in; /* 0: a norm scale (1 +- 0.2); -1: a bias (+-0.2) */
} tensor;

typedef struct tensor_list {
    tensor *t;
    int n, cap;
} tensor_list;

/* Appends a tensor; false when memory runs out. */
static bool add(tensor_list *l, const char *name, long long rows, long long cols, long long fan_in)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        tensor *grown = realloc(l->t, (size_t)cap * sizeof *grown);
        if (!grown)
            return false;
        l->t = grown, l->cap = cap;
    }
    tensor *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = cols ? 2 : 1;
    t->shape[0] = rows, t->shape[1] = cols;
    t->fan_in = fan_in;
    return true;
}

/* The tensors of a preset, with Hugging Face's names and shapes (l->t NULL when memory runs out). */
static tensor_list layout(const preset *p)
{
    tensor_list l = {0};
    bool ok = true;
    char n[96];
    const long long d = p->hidden, f = p->inter, hd = p->hidden / p->heads, kv = (long long)p->kv_heads * hd;
    if (!strcmp(p->arch, "llama")) {
        ok &= add(&l, "model.embed_tokens.weight", p->vocab, d, d);
        for (int i = 0; i < p->layers; i++) {
#define L(s, r, c, fi) (snprintf(n, sizeof n, "model.layers.%d." s, i), ok &= add(&l, n, r, c, fi))
            L("input_layernorm.weight", d, 0, 0);
            L("self_attn.q_proj.weight", d, d, d);
            L("self_attn.k_proj.weight", kv, d, d);
            L("self_attn.v_proj.weight", kv, d, d);
            L("self_attn.o_proj.weight", d, d, d);
            L("post_attention_layernorm.weight", d, 0, 0);
            L("mlp.gate_proj.weight", f, d, d);
            L("mlp.up_proj.weight", f, d, d);
            L("mlp.down_proj.weight", d, f, f);
#undef L
        }
        ok &= add(&l, "model.norm.weight", d, 0, 0);
        if (!p->tied)
            ok &= add(&l, "lm_head.weight", p->vocab, d, d);
    } else {
        ok &= add(&l, "transformer.wte.weight", p->vocab, d, d);
        ok &= add(&l, "transformer.wpe.weight", p->max_pos, d, d);
        for (int i = 0; i < p->layers; i++) {
#define L(s, r, c, fi) (snprintf(n, sizeof n, "transformer.h.%d." s, i), ok &= add(&l, n, r, c, fi))
            L("ln_1.weight", d, 0, 0);
            L("ln_1.bias", d, 0, -1);
            L("attn.c_attn.weight", d, 3 * d, d); /* Conv1D: [in, out] */
            L("attn.c_attn.bias", 3 * d, 0, -1);
            L("attn.c_proj.weight", d, d, d);
            L("attn.c_proj.bias", d, 0, -1);
            L("ln_2.weight", d, 0, 0);
            L("ln_2.bias", d, 0, -1);
            L("mlp.c_fc.weight", d, f, d);
            L("mlp.c_fc.bias", f, 0, -1);
            L("mlp.c_proj.weight", f, d, f);
            L("mlp.c_proj.bias", d, 0, -1);
#undef L
        }
        ok &= add(&l, "transformer.ln_f.weight", d, 0, 0);
        ok &= add(&l, "transformer.ln_f.bias", d, 0, -1);
    }
    if (!ok) {
        free(l.t);
        l = (tensor_list){0};
    }
    return l;
}

static long long numel(const tensor *t)
{
    return t->ndim == 2 ? t->shape[0] * t->shape[1] : t->shape[0];
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Writes the tensor's random values in the chosen 16-bit format. */
static bool write_values(FILE *f, const tensor *t, bool bf16, uint64_t *rng)
{
    enum { CHUNK = 1 << 16 };
    static uint16_t buf[CHUNK];
    const double a = t->fan_in > 0 ? 1.5 / sqrt((double)t->fan_in) * 1.7320508 : 0.2 * 1.7320508;
    long long left = numel(t);
    while (left > 0) {
        int m = left < CHUNK ? (int)left : CHUNK;
        for (int i = 0; i < m; i++) {
            double u = (double)(next_random(rng) >> 11) * 0x1.0p-53 * 2 - 1; /* uniform in [-1, 1) */
            float v = (float)(t->fan_in == 0 ? 1.0 + 0.2 * u : a * u);
            buf[i] = bf16 ? f32_to_bf16(v) : f32_to_fp16(v);
        }
        if (fwrite(buf, 2, (size_t)m, f) != (size_t)m)
            return false;
        left -= m;
    }
    return true;
}

/* Writes tensors [first, last) as one safetensors file. */
static bool write_shard(const char *path, const tensor_list *l, int first, int last, bool bf16, uint64_t *rng)
{
    cJSON *h = cJSON_CreateObject();
    cJSON_AddItemToObject(h, "__metadata__", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(h, "__metadata__"), "format", "pt");
    long long off = 0;
    for (int i = first; i < last; i++) {
        const tensor *t = &l->t[i];
        cJSON *e = cJSON_AddObjectToObject(h, t->name);
        cJSON_AddStringToObject(e, "dtype", bf16 ? "BF16" : "F16");
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        off += 2 * numel(t);
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
    }
    char *json = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    size_t len = strlen(json), padded = (len + 7) / 8 * 8; /* data starts 8-byte aligned */
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL;
    unsigned char hl[8];
    for (int i = 0; i < 8; i++)
        hl[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    ok = ok && fwrite(hl, 1, 8, f) == 8 && fwrite(json, 1, len, f) == len;
    for (size_t i = len; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    for (int i = first; ok && i < last; i++)
        ok = write_values(f, &l->t[i], bf16, rng);
    if (f && fclose(f) != 0)
        ok = false;
    free(json);
    return ok;
}

static bool write_json(const char *dir, const char *name, cJSON *root)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *s = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(s, f) >= 0;
    if (f && fclose(f) != 0)
        ok = false;
    free(s);
    cJSON_Delete(root);
    return ok;
}

static cJSON *config_json(const preset *p, bool bf16)
{
    cJSON *c = cJSON_CreateObject();
    const bool llama = !strcmp(p->arch, "llama");
    cJSON *archs = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(archs, cJSON_CreateString(llama ? "LlamaForCausalLM" : "GPT2LMHeadModel"));
    cJSON_AddStringToObject(c, "model_type", llama ? "llama" : "gpt2");
    cJSON_AddNumberToObject(c, "vocab_size", p->vocab);
    cJSON_AddStringToObject(c, "torch_dtype", bf16 ? "bfloat16" : "float16");
    cJSON_AddNumberToObject(c, "bos_token_id", p->vocab - 2);
    cJSON_AddNumberToObject(c, "eos_token_id", p->vocab - 1);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", p->tied);
    if (llama) {
        cJSON_AddNumberToObject(c, "hidden_size", p->hidden);
        cJSON_AddNumberToObject(c, "intermediate_size", p->inter);
        cJSON_AddNumberToObject(c, "num_hidden_layers", p->layers);
        cJSON_AddNumberToObject(c, "num_attention_heads", p->heads);
        cJSON_AddNumberToObject(c, "num_key_value_heads", p->kv_heads);
        cJSON_AddNumberToObject(c, "head_dim", p->hidden / p->heads);
        cJSON_AddNumberToObject(c, "max_position_embeddings", p->max_pos);
        cJSON_AddNumberToObject(c, "rms_norm_eps", 1e-5);
        cJSON_AddStringToObject(c, "hidden_act", "silu");
        cJSON_AddNumberToObject(c, "rope_theta", p->rope_theta);
        if (p->llama3_rope) {
            cJSON *r = cJSON_AddObjectToObject(c, "rope_scaling");
            cJSON_AddStringToObject(r, "rope_type", "llama3");
            cJSON_AddNumberToObject(r, "factor", 32.0);
            cJSON_AddNumberToObject(r, "low_freq_factor", 1.0);
            cJSON_AddNumberToObject(r, "high_freq_factor", 4.0);
            cJSON_AddNumberToObject(r, "original_max_position_embeddings", 8192);
        } else {
            cJSON_AddNullToObject(c, "rope_scaling");
        }
        cJSON_AddBoolToObject(c, "attention_bias", false);
        cJSON_AddBoolToObject(c, "mlp_bias", false);
    } else {
        cJSON_AddNumberToObject(c, "n_embd", p->hidden);
        cJSON_AddNumberToObject(c, "n_layer", p->layers);
        cJSON_AddNumberToObject(c, "n_head", p->heads);
        cJSON_AddNumberToObject(c, "n_positions", p->max_pos);
        cJSON_AddNumberToObject(c, "n_ctx", p->max_pos);
        cJSON_AddNullToObject(c, "n_inner");
        cJSON_AddStringToObject(c, "activation_function", "gelu_new");
        cJSON_AddNumberToObject(c, "layer_norm_epsilon", 1e-5);
    }
    return c;
}

/* GPT-2's byte-to-printable mapping: printable Latin-1 bytes stand for themselves, the rest map to U+0100 on. */
static void byte_char(int b, char out[4])
{
    int cp = b;
    if (!((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))) {
        int k = 0;
        for (int x = 0; x < b; x++)
            k += !((x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff));
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp, out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3f)), out[2] = 0;
    }
}

/* A byte-level BPE over the whole vocabulary: the 256 bytes, then merges of byte pairs (in a fixed order), then
 * merges of a pair and a byte, up to vocab - 2 tokens; the last two ids are <|begin_of_text|> and <|end_of_text|>. */
static cJSON *tokenizer_json(const preset *p)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "version", "1.0");
    cJSON *added = cJSON_AddArrayToObject(t, "added_tokens");
    const char *specials[2] = {"<|begin_of_text|>", "<|end_of_text|>"};
    for (int i = 0; i < 2; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", p->vocab - 2 + i);
        cJSON_AddStringToObject(a, "content", specials[i]);
        cJSON_AddBoolToObject(a, "single_word", false);
        cJSON_AddBoolToObject(a, "lstrip", false);
        cJSON_AddBoolToObject(a, "rstrip", false);
        cJSON_AddBoolToObject(a, "normalized", false);
        cJSON_AddBoolToObject(a, "special", true);
        cJSON_AddItemToArray(added, a);
    }
    cJSON_AddNullToObject(t, "normalizer");
    cJSON *pre = cJSON_AddObjectToObject(t, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddBoolToObject(pre, "add_prefix_space", false);
    cJSON_AddBoolToObject(pre, "trim_offsets", true);
    cJSON_AddBoolToObject(pre, "use_regex", true);
    cJSON *post = cJSON_AddObjectToObject(t, "post_processor");
    cJSON_AddStringToObject(post, "type", "TemplateProcessing");
    cJSON *single = cJSON_AddArrayToObject(post, "single");
    cJSON *st = cJSON_CreateObject(), *sq = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "SpecialToken"), "id", specials[0]);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(st, "SpecialToken"), "type_id", 0);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(sq, "Sequence"), "id", "A");
    cJSON_AddNumberToObject(cJSON_GetObjectItem(sq, "Sequence"), "type_id", 0);
    cJSON_AddItemToArray(single, st);
    cJSON_AddItemToArray(single, sq);
    cJSON *pair = cJSON_AddArrayToObject(post, "pair");
    cJSON_AddItemToArray(pair, cJSON_Duplicate(st, 1));
    cJSON_AddItemToArray(pair, cJSON_Duplicate(sq, 1));
    cJSON *sp = cJSON_AddObjectToObject(cJSON_AddObjectToObject(post, "special_tokens"), specials[0]);
    cJSON_AddStringToObject(sp, "id", specials[0]);
    cJSON *ids = cJSON_AddArrayToObject(sp, "ids");
    cJSON_AddItemToArray(ids, cJSON_CreateNumber(p->vocab - 2));
    cJSON *toks = cJSON_AddArrayToObject(sp, "tokens");
    cJSON_AddItemToArray(toks, cJSON_CreateString(specials[0]));
    cJSON *dec = cJSON_AddObjectToObject(t, "decoder");
    cJSON_AddStringToObject(dec, "type", "ByteLevel");
    cJSON_AddBoolToObject(dec, "add_prefix_space", true);
    cJSON_AddBoolToObject(dec, "trim_offsets", true);
    cJSON_AddBoolToObject(dec, "use_regex", true);

    cJSON *model = cJSON_AddObjectToObject(t, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddBoolToObject(model, "fuse_unk", false);
    cJSON_AddBoolToObject(model, "byte_fallback", false);
    cJSON_AddBoolToObject(model, "ignore_merges", false);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    char chars[256][4];
    for (int b = 0; b < 256; b++) {
        byte_char(b, chars[b]);
        cJSON_AddNumberToObject(vocab, chars[b], b);
    }
    const int regular = p->vocab - 2;
    int id = 256;
    /* Pairs in the order (a, b) with the more printable bytes first: letters and space pair up early. */
    for (int a = 0; a < 256 && id < regular; a++)
        for (int b = 0; b < 256 && id < regular; b++, id++) {
            char s[16], m[16];
            snprintf(s, sizeof s, "%s%s", chars[(a + 32) % 256], chars[(b + 32) % 256]);
            snprintf(m, sizeof m, "%s %s", chars[(a + 32) % 256], chars[(b + 32) % 256]);
            cJSON_AddNumberToObject(vocab, s, id);
            cJSON_AddItemToArray(merges, cJSON_CreateString(m));
        }
    for (int a = 0; a < 256 && id < regular; a++) /* then a pair and a byte */
        for (int b = 0; b < 256 && id < regular; b++)
            for (int c = 0; c < 256 && id < regular; c++, id++) {
                char s[24], m[24];
                snprintf(s, sizeof s, "%s%s%s", chars[(a + 32) % 256], chars[(b + 32) % 256], chars[(c + 32) % 256]);
                snprintf(m, sizeof m, "%s%s %s", chars[(a + 32) % 256], chars[(b + 32) % 256], chars[(c + 32) % 256]);
                cJSON_AddNumberToObject(vocab, s, id);
                cJSON_AddItemToArray(merges, cJSON_CreateString(m));
            }
    return t;
}

enum { OPT_ARCH = 1, OPT_PRESET, OPT_DTYPE, OPT_SEED, OPT_OUT, OPT_HELP };

int cmd_make_model(int argc, char **argv)
{
    static const struct option options[] = {
        {"arch", required_argument, 0, OPT_ARCH}, {"preset", required_argument, 0, OPT_PRESET},
        {"dtype", required_argument, 0, OPT_DTYPE}, {"seed", required_argument, 0, OPT_SEED},
        {"out", required_argument, 0, OPT_OUT},    {"help", no_argument, 0, OPT_HELP},
        {0, 0, 0, 0},
    };
    const char *arch = NULL, *name = NULL, *out = NULL;
    bool bf16 = false;
    uint64_t seed = 1;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        bool ok = true;
        switch (opt) {
        case OPT_ARCH: arch = optarg; break;
        case OPT_PRESET: name = optarg; break;
        case OPT_DTYPE:
            ok = !strcmp(optarg, "f16") || !strcmp(optarg, "bf16");
            bf16 = !strcmp(optarg, "bf16");
            if (!ok)
                fprintf(stderr, "error: --dtype must be f16 or bf16, got \"%s\"\n", optarg);
            break;
        case OPT_SEED: ok = cli_parse_u64("--seed", optarg, &seed); break;
        case OPT_OUT: out = optarg; break;
        case OPT_HELP: usage(stdout); return EXIT_OK;
        default: ok = false;
        }
        if (!ok) {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    const preset *p = NULL;
    for (size_t i = 0; name && i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name))
            p = &presets[i];
    if (optind < argc || !arch || !p || !out || strcmp(arch, p->arch)) {
        fprintf(stderr, "error: --arch, --preset (one of its arch's presets) and --out are required\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "error: cannot create %s: %s\n", out, strerror(errno));
        return EXIT_RUNTIME;
    }
    tensor_list l = layout(p);
    if (!l.t) {
        fprintf(stderr, "error: out of memory\n");
        return EXIT_RUNTIME;
    }
    uint64_t rng = seed | 1;
    const long long shard_bytes = 4LL << 30;
    long long total = 0;
    for (int i = 0; i < l.n; i++)
        total += 2 * numel(&l.t[i]);
    const int n_shards = (int)((total + shard_bytes - 1) / shard_bytes);
    cJSON *index = cJSON_CreateObject(), *map = cJSON_CreateObject();
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(index, "metadata"), "total_size", (double)total);
    cJSON_AddItemToObject(index, "weight_map", map);
    bool ok = true;
    double t0 = cli_now();
    for (int s = 0, first = 0; s < n_shards && ok; s++) {
        /* Tensors fill a shard until it would pass shard_bytes (the last takes the rest). */
        int last = first;
        long long bytes = 0;
        while (last < l.n && (s == n_shards - 1 || bytes + 2 * numel(&l.t[last]) <= shard_bytes || last == first))
            bytes += 2 * numel(&l.t[last++]);
        char file[64], path[4096];
        if (n_shards == 1)
            snprintf(file, sizeof file, "model.safetensors");
        else
            snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        snprintf(path, sizeof path, "%s/%s", out, file);
        fprintf(stderr, "writing %s (%.2f GB)...\n", path, bytes / 1e9);
        ok = write_shard(path, &l, first, last, bf16, &rng);
        for (int i = first; i < last; i++)
            cJSON_AddStringToObject(map, l.t[i].name, file);
        first = last;
    }
    if (ok && n_shards > 1)
        ok = write_json(out, "model.safetensors.index.json", index);
    else
        cJSON_Delete(index);
    cJSON *gen = cJSON_CreateObject();
    cJSON_AddNumberToObject(gen, "bos_token_id", p->vocab - 2);
    cJSON_AddNumberToObject(gen, "eos_token_id", p->vocab - 1);
    ok = ok && write_json(out, "config.json", config_json(p, bf16)) && write_json(out, "generation_config.json", gen) &&
         write_json(out, "tokenizer.json", tokenizer_json(p));
    free(l.t);
    if (!ok) {
        fprintf(stderr, "error: writing %s failed: %s\n", out, strerror(errno));
        return EXIT_RUNTIME;
    }
    fprintf(stderr, "wrote %s: %s, %.2f GB of %s weights in %.1f s\n", out, p->name, total / 1e9, bf16 ? "bf16" : "f16",
            cli_now() - t0);
    return EXIT_OK;
}
