/* model_config.c — config.json (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM, GPT2LMHeadModel) and
 * generation_config.json → model_config. Both layouts of config.json are read: the classic one (top-level
 * rope_theta, rope_scaling) and transformers 5's (rope_parameters); dtype / torch_dtype are not needed (each tensor's
 * dtype is in its safetensors header). Absent fields take the Hugging Face class defaults; present ones are type-
 * and range-checked. */
#include "model_config.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "json.h"

#define CONFIG_MAX_BYTES (1u << 20)

/* Generous bounds that keep every size product far from overflow. */
#define MAX_DIM (1 << 17)
#define MAX_VOCAB (1 << 22)
#define MAX_LAYERS 1024
#define MAX_HEADS 1024
#define MAX_CONTEXT (1 << 24)

/* config.json's architectures names (and model_type, for a config without the list). */
static const struct {
    const char *name, *model_type;
    model_arch arch;
} ARCHS[] = {
    {"LlamaForCausalLM", "llama", ARCH_LLAMA},
    {"Qwen2ForCausalLM", "qwen2", ARCH_QWEN2},
    {"MistralForCausalLM", "mistral", ARCH_MISTRAL},
    {"GPT2LMHeadModel", "gpt2", ARCH_GPT2},
};
#define N_ARCHS (sizeof ARCHS / sizeof ARCHS[0])

const char *model_arch_name(model_arch arch)
{
    for (size_t i = 0; i < N_ARCHS; i++)
        if (ARCHS[i].arch == arch)
            return ARCHS[i].name;
    return "unknown";
}

/* Reads an int field with bounds into an int. */
static fk_status get_int(const cJSON *obj, const char *key, bool required, int min, int max, int *out,
                         const char *file, fk_error *err)
{
    int64_t v = *out;
    fk_status s = json_get_int(obj, key, required, min, max, &v, file, err);
    if (!s)
        *out = (int)v;
    return s;
}

static fk_status detect_arch(const cJSON *root, const char *file, model_arch *arch, fk_error *err)
{
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const char *name = NULL;
    if (cJSON_IsArray(archs) && cJSON_GetArraySize(archs) > 0) {
        if (!cJSON_IsString(archs->child))
            return fk_error_set(err, FK_ERR_FORMAT, "%s: \"architectures\" must hold strings", file);
        name = archs->child->valuestring;
    } else if (archs && !cJSON_IsNull(archs) && !cJSON_IsArray(archs)) {
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"architectures\" must be an array", file);
    }
    if (!name) { /* no architectures list: fall back to model_type */
        fk_status s = json_get_string(root, "model_type", true, &name, file, err);
        if (s)
            return fk_error_prefix(err, s, "no \"architectures\" list; ");
        for (size_t i = 0; i < N_ARCHS; i++)
            if (strcmp(name, ARCHS[i].model_type) == 0)
                name = ARCHS[i].name;
    }
    for (size_t i = 0; i < N_ARCHS; i++)
        if (strcmp(name, ARCHS[i].name) == 0) {
            *arch = ARCHS[i].arch;
            return FK_OK;
        }
    return fk_error_set(err, FK_ERR_UNSUPPORTED,
                        "%s: unsupported architecture \"%s\" (supported: LlamaForCausalLM, Qwen2ForCausalLM, "
                        "MistralForCausalLM, GPT2LMHeadModel)",
                        file, name);
}

/* rope_scaling (or rope_parameters, the newer spelling) → cfg->rope and its factors. */
static fk_status parse_rope(const cJSON *root, const char *file, model_config *cfg, fk_error *err)
{
    cfg->rope = ROPE_DEFAULT;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    const char *key = "rope_scaling";
    if (!rs || cJSON_IsNull(rs)) {
        rs = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
        key = "rope_parameters";
    }
    if (!rs || cJSON_IsNull(rs))
        return FK_OK;
    if (!cJSON_IsObject(rs))
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" must be an object or null", file, key);
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "%s: %s", file, key);
    fk_status s = json_get_double(rs, "rope_theta", false, 1e-3, 1e12, &cfg->rope_theta, what, err);
    if (s)
        return s;
    const char *type = NULL;
    if ((s = json_get_string(rs, "rope_type", false, &type, what, err)))
        return s;
    if (!type && (s = json_get_string(rs, "type", false, &type, what, err)))
        return s;
    if (!type)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"%s\" has no \"rope_type\"", file, key);
    if (strcmp(type, "default") == 0)
        return FK_OK;
    if (strcmp(type, "linear") == 0)
        cfg->rope = ROPE_LINEAR;
    else if (strcmp(type, "llama3") == 0)
        cfg->rope = ROPE_LLAMA3;
    else
        return fk_error_set(err, FK_ERR_UNSUPPORTED,
                            "%s: unsupported rope type \"%s\" in \"%s\" (supported: default, linear, llama3)", file,
                            type, key);
    if ((s = json_get_double(rs, "factor", true, 1e-3, 1e6, &cfg->rope_factor, what, err)))
        return s;
    if (cfg->rope == ROPE_LLAMA3) {
        if ((s = json_get_double(rs, "low_freq_factor", true, 1e-6, 1e6, &cfg->rope_low_freq_factor, what, err)) ||
            (s = json_get_double(rs, "high_freq_factor", true, 1e-6, 1e6, &cfg->rope_high_freq_factor, what, err)) ||
            (s = get_int(rs, "original_max_position_embeddings", true, 1, MAX_CONTEXT, &cfg->rope_original_max,
                         what, err)))
            return s;
        if (!(cfg->rope_high_freq_factor > cfg->rope_low_freq_factor))
            return fk_error_set(err, FK_ERR_FORMAT, "%s: high_freq_factor (%g) must exceed low_freq_factor (%g)",
                                what, cfg->rope_high_freq_factor, cfg->rope_low_freq_factor);
    }
    return FK_OK;
}

/* The class defaults of LlamaConfig, Qwen2Config and MistralConfig (transformers) for absent fields. */
static void llama_defaults(model_config *cfg)
{
    cfg->vocab_size = 32000;
    cfg->hidden_size = 4096;
    cfg->intermediate_size = 11008;
    cfg->n_layers = 32;
    cfg->n_heads = 32;
    cfg->n_kv_heads = 0; /* = n_heads */
    cfg->max_context = 2048;
    cfg->rope_theta = 10000.0;
    if (cfg->arch == ARCH_QWEN2) {
        cfg->vocab_size = 151936;
        cfg->intermediate_size = 22016;
        cfg->n_kv_heads = 32;
        cfg->max_context = 32768;
        cfg->qkv_bias = true; /* Qwen2's q/k/v always have biases; its config has no switch for them */
    } else if (cfg->arch == ARCH_MISTRAL) {
        cfg->intermediate_size = 14336;
        cfg->n_kv_heads = 8;
        cfg->max_context = 131072;
        cfg->sliding_window = 4096;
    }
}

/* Sliding-window attention. FlashKernel's attention kernels have no window mask: Qwen2's use_sliding_window and
 * any layer_types entry other than "full_attention" are refused; Mistral's sliding_window (null: none) bounds
 * max_context instead, since within the window the mask changes nothing. */
static fk_status parse_windows(const cJSON *root, const char *file, model_config *cfg, fk_error *err)
{
    fk_status s;
    if (cfg->arch == ARCH_QWEN2) {
        bool use = false;
        if ((s = json_get_bool(root, "use_sliding_window", &use, file, err)))
            return s;
        if (use)
            return fk_error_set(err, FK_ERR_UNSUPPORTED,
                                "%s: \"use_sliding_window\" is true: sliding-window attention is not supported "
                                "(FlashKernel's attention kernels have no window mask)",
                                file);
    }
    if (cfg->arch == ARCH_MISTRAL) {
        if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "sliding_window")))
            cfg->sliding_window = 0;
        else if ((s = get_int(root, "sliding_window", false, 1, MAX_CONTEXT, &cfg->sliding_window, file, err)))
            return s;
        if (cfg->sliding_window && cfg->sliding_window < cfg->max_context)
            cfg->max_context = cfg->sliding_window;
    }
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (!types || cJSON_IsNull(types))
        return FK_OK;
    if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != cfg->n_layers)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: \"layer_types\" must be an array of %d strings, one per layer",
                            file, cfg->n_layers);
    int i = 0;
    for (const cJSON *t = types->child; t; t = t->next, i++) {
        if (!cJSON_IsString(t))
            return fk_error_set(err, FK_ERR_FORMAT, "%s: layer_types[%d] must be a string", file, i);
        if (strcmp(t->valuestring, "full_attention") != 0)
            return fk_error_set(err, FK_ERR_UNSUPPORTED,
                                "%s: layer_types[%d] is \"%s\": only \"full_attention\" layers are supported "
                                "(FlashKernel's attention kernels have no sliding-window mask)",
                                file, i, t->valuestring);
    }
    return FK_OK;
}

/* LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM. */
static fk_status parse_llama(const cJSON *root, const char *file, model_config *cfg, fk_error *err)
{
    llama_defaults(cfg);
    double eps = 1e-6;
    const char *act = "silu";
    bool attention_bias = false;
    fk_status s;
    if ((s = get_int(root, "vocab_size", false, 1, MAX_VOCAB, &cfg->vocab_size, file, err)) ||
        (s = get_int(root, "hidden_size", false, 1, MAX_DIM, &cfg->hidden_size, file, err)) ||
        (s = get_int(root, "intermediate_size", false, 1, MAX_DIM * 4, &cfg->intermediate_size, file, err)) ||
        (s = get_int(root, "num_hidden_layers", false, 1, MAX_LAYERS, &cfg->n_layers, file, err)) ||
        (s = get_int(root, "num_attention_heads", false, 1, MAX_HEADS, &cfg->n_heads, file, err)) ||
        (s = get_int(root, "num_key_value_heads", false, 1, MAX_HEADS, &cfg->n_kv_heads, file, err)) ||
        (s = get_int(root, "head_dim", false, 2, 1024, &cfg->head_dim, file, err)) ||
        (s = get_int(root, "max_position_embeddings", false, 1, MAX_CONTEXT, &cfg->max_context, file, err)) ||
        (s = json_get_double(root, "rms_norm_eps", false, 0, 1, &eps, file, err)) ||
        (s = json_get_double(root, "rope_theta", false, 1e-3, 1e12, &cfg->rope_theta, file, err)) ||
        (s = json_get_bool(root, "tie_word_embeddings", &cfg->tie_embeddings, file, err)) ||
        (s = json_get_string(root, "hidden_act", false, &act, file, err)) || (s = parse_rope(root, file, cfg, err)))
        return s;
    if (cfg->arch == ARCH_LLAMA) { /* the others have no such switches */
        if ((s = json_get_bool(root, "attention_bias", &attention_bias, file, err)) ||
            (s = json_get_bool(root, "mlp_bias", &cfg->mlp_bias, file, err)))
            return s;
        cfg->qkv_bias = cfg->o_bias = attention_bias;
    }
    if (strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s: unsupported hidden_act \"%s\" (supported: silu)", file, act);
    if (!cfg->n_kv_heads)
        cfg->n_kv_heads = cfg->n_heads;
    if (cfg->n_heads % cfg->n_kv_heads)
        return fk_error_set(err, FK_ERR_FORMAT,
                            "%s: num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)", file,
                            cfg->n_heads, cfg->n_kv_heads);
    if (!cfg->head_dim) {
        if (cfg->hidden_size % cfg->n_heads)
            return fk_error_set(err, FK_ERR_FORMAT,
                                "%s: hidden_size (%d) is not a multiple of num_attention_heads (%d) and no head_dim "
                                "is given",
                                file, cfg->hidden_size, cfg->n_heads);
        cfg->head_dim = cfg->hidden_size / cfg->n_heads;
    }
    if (cfg->head_dim % 2)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: head_dim %d must be even for RoPE", file, cfg->head_dim);
    if ((int64_t)cfg->n_heads * cfg->head_dim > MAX_DIM)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: num_attention_heads x head_dim = %lld is too large", file,
                            (long long)cfg->n_heads * cfg->head_dim);
    cfg->norm_eps = (float)eps;
    return parse_windows(root, file, cfg, err);
}

static fk_status parse_gpt2(const cJSON *root, const char *file, model_config *cfg, fk_error *err)
{
    /* GPT2Config defaults */
    cfg->vocab_size = 50257;
    cfg->hidden_size = 768;
    cfg->intermediate_size = 0;
    cfg->n_layers = 12;
    cfg->n_heads = 12;
    cfg->max_context = 1024;
    double eps = 1e-5;
    cfg->tie_embeddings = true;
    cfg->scale_attn_weights = true;
    cfg->rope = ROPE_NONE;
    const char *act = "gelu_new";
    fk_status s;
    if ((s = get_int(root, "vocab_size", false, 1, MAX_VOCAB, &cfg->vocab_size, file, err)) ||
        (s = get_int(root, "n_embd", false, 1, MAX_DIM, &cfg->hidden_size, file, err)) ||
        (s = get_int(root, "n_inner", false, 1, MAX_DIM * 4, &cfg->intermediate_size, file, err)) ||
        (s = get_int(root, "n_layer", false, 1, MAX_LAYERS, &cfg->n_layers, file, err)) ||
        (s = get_int(root, "n_head", false, 1, MAX_HEADS, &cfg->n_heads, file, err)) ||
        (s = get_int(root, "n_positions", false, 1, MAX_CONTEXT, &cfg->max_context, file, err)) ||
        (s = json_get_double(root, "layer_norm_epsilon", false, 0, 1, &eps, file, err)) ||
        (s = json_get_bool(root, "tie_word_embeddings", &cfg->tie_embeddings, file, err)) ||
        (s = json_get_bool(root, "scale_attn_weights", &cfg->scale_attn_weights, file, err)) ||
        (s = json_get_bool(root, "scale_attn_by_inverse_layer_idx", &cfg->scale_attn_by_layer, file, err)) ||
        (s = json_get_string(root, "activation_function", false, &act, file, err)))
        return s;
    if (strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0 && strcmp(act, "gelu_fast") != 0)
        return fk_error_set(err, FK_ERR_UNSUPPORTED,
                            "%s: unsupported activation_function \"%s\" (supported: gelu_new, gelu_pytorch_tanh, "
                            "gelu_fast)",
                            file, act);
    if (cfg->hidden_size % cfg->n_heads)
        return fk_error_set(err, FK_ERR_FORMAT, "%s: n_embd (%d) is not a multiple of n_head (%d)", file,
                            cfg->hidden_size, cfg->n_heads);
    if (!cfg->intermediate_size)
        cfg->intermediate_size = 4 * cfg->hidden_size;
    cfg->n_kv_heads = cfg->n_heads;
    cfg->head_dim = cfg->hidden_size / cfg->n_heads;
    cfg->norm_eps = (float)eps;
    return FK_OK;
}

/* eos_token_id: an int, a list of ints, or null. Replaces cfg's list when present. */
static fk_status parse_eos(const cJSON *root, const char *file, model_config *cfg, fk_error *err)
{
    const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    if (!eos || cJSON_IsNull(eos))
        return FK_OK;
    const cJSON *items = cJSON_IsArray(eos) ? eos->child : eos;
    int n = 0;
    for (const cJSON *e = items; e; e = cJSON_IsArray(eos) ? e->next : NULL) {
        int64_t v;
        if (!json_as_int(e, &v) || v < 0 || v >= cfg->vocab_size)
            return fk_error_set(err, FK_ERR_FORMAT, "%s: \"eos_token_id\" must be ids in [0, %d)", file,
                                cfg->vocab_size);
        if (n == FK_MAX_EOS_IDS)
            return fk_error_set(err, FK_ERR_UNSUPPORTED, "%s: more than %d eos_token_id values", file, FK_MAX_EOS_IDS);
        cfg->eos_ids[n++] = (int)v;
    }
    cfg->n_eos = n;
    return FK_OK;
}

static fk_status parse_bos(const cJSON *root, const char *file, model_config *cfg, fk_error *err)
{
    int64_t bos = cfg->bos_id;
    fk_status s = json_get_int(root, "bos_token_id", false, 0, cfg->vocab_size - 1, &bos, file, err);
    cfg->bos_id = (int)bos;
    return s;
}

fk_status model_config_load(const char *dir, model_config *cfg, fk_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bos_id = -1;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
    cJSON *root;
    fk_status s = json_parse_file(path, CONFIG_MAX_BYTES, &root, err);
    if (s)
        return s;
    if (!cJSON_IsObject(root))
        s = fk_error_set(err, FK_ERR_FORMAT, "%s: not a JSON object", path);
    if (!s)
        s = detect_arch(root, path, &cfg->arch, err);
    if (!s)
        s = cfg->arch == ARCH_GPT2 ? parse_gpt2(root, path, cfg, err) : parse_llama(root, path, cfg, err);
    if (!s)
        s = parse_eos(root, path, cfg, err);
    if (!s)
        s = parse_bos(root, path, cfg, err);
    cJSON_Delete(root);
    if (s)
        return s;

    if (snprintf(path, sizeof path, "%s/generation_config.json", dir) >= (int)sizeof path)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "%s: path too long", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return FK_OK; /* optional */
    fclose(f);
    if ((s = json_parse_file(path, CONFIG_MAX_BYTES, &root, err)))
        return s;
    if (!cJSON_IsObject(root))
        s = fk_error_set(err, FK_ERR_FORMAT, "%s: not a JSON object", path);
    if (!s)
        s = parse_eos(root, path, cfg, err);
    cJSON_Delete(root);
    return s;
}

void model_config_rope_inv_freq(const model_config *cfg, float *inv_freq)
{
    /* Same float32 operations, in the same order, as transformers' rope initialisation. */
    const int half = cfg->head_dim / 2;
    for (int i = 0; i < half; i++) {
        float exponent = (float)(2 * i) / (float)cfg->head_dim;
        inv_freq[i] = 1.0f / powf((float)cfg->rope_theta, exponent);
    }
    if (cfg->rope == ROPE_LINEAR) {
        for (int i = 0; i < half; i++)
            inv_freq[i] /= (float)cfg->rope_factor;
    } else if (cfg->rope == ROPE_LLAMA3) {
        const float factor = (float)cfg->rope_factor;
        const float low = (float)cfg->rope_low_freq_factor, high = (float)cfg->rope_high_freq_factor;
        const float old_len = (float)cfg->rope_original_max;
        const float low_freq_wavelen = old_len / low, high_freq_wavelen = old_len / high;
        for (int i = 0; i < half; i++) {
            float wavelen = (float)(2.0 * M_PI) / inv_freq[i];
            float f = wavelen > low_freq_wavelen ? inv_freq[i] / factor : inv_freq[i];
            if (!(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen)) {
                float smooth = (old_len / wavelen - low) / (high - low);
                f = (1 - smooth) * f / factor + smooth * f;
            }
            inv_freq[i] = f;
        }
    }
}
