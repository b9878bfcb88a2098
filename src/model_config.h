/* model_config.h — a model's architecture as read from config.json and generation_config.json. */
#ifndef FK_MODEL_CONFIG_H
#define FK_MODEL_CONFIG_H

#include <stdbool.h>

#include "flashkernel.h"

/* Llama, Qwen2 and Mistral are the Llama block (RMSNorm, RoPE, SwiGLU) with small differences; GPT-2 is its own. */
typedef enum model_arch { ARCH_LLAMA, ARCH_QWEN2, ARCH_MISTRAL, ARCH_GPT2 } model_arch;

typedef enum rope_kind { ROPE_NONE, ROPE_DEFAULT, ROPE_LINEAR, ROPE_LLAMA3 } rope_kind;

typedef struct model_config {
    model_arch arch;
    int vocab_size;
    int hidden_size;
    int intermediate_size;
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim;
    int max_context;         /* what the model serves exactly: max_position_embeddings, or a smaller sliding window */
    int sliding_window;      /* Mistral's window (0: none); attention has no window mask, so it bounds max_context */
    float norm_eps;          /* rms_norm_eps or layer_norm_epsilon */
    bool tie_embeddings;
    bool qkv_bias;           /* q/k/v biases: Llama's attention_bias, always on Qwen2 */
    bool o_bias;             /* o_proj bias: Llama's attention_bias */
    bool mlp_bias;           /* Llama: gate/up/down biases */
    bool scale_attn_by_layer; /* GPT-2 scale_attn_by_inverse_layer_idx */
    bool scale_attn_weights;  /* GPT-2: false means no 1/sqrt(head_dim) */
    /* RoPE (Llama only) */
    rope_kind rope;
    double rope_theta;
    double rope_factor;
    double rope_low_freq_factor;
    double rope_high_freq_factor;
    int rope_original_max;
    int bos_id; /* -1 when none */
    int n_eos;
    int eos_ids[FK_MAX_EOS_IDS];
} model_config;

/* Reads dir/config.json and, if present, dir/generation_config.json (its eos_token_id wins).
 * Errors name the file and the field: FK_ERR_IO, FK_ERR_FORMAT, FK_ERR_UNSUPPORTED. */
fk_status model_config_load(const char *dir, model_config *cfg, fk_error *err);

/* The architectures name of config.json: "LlamaForCausalLM", "Qwen2ForCausalLM", ... */
const char *model_arch_name(model_arch arch);

/* RoPE inverse frequencies, [head_dim / 2], as Hugging Face computes them (rope scaling applied). */
void model_config_rope_inv_freq(const model_config *cfg, float *inv_freq);

#endif
