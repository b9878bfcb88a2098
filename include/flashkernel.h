/* flashkernel.h — the public C API of FlashKernel: load a Hugging Face model directory and run it.
 *
 * Conventions
 * - Every function that can fail returns fk_status (FK_OK = 0, errors negative) and, when `err` is not
 *   NULL, fills it with the same status and a message naming what failed (file, tensor, field, value).
 * - A failed call leaves its outputs unspecified and every object it was given as it was before the call.
 * - Objects are not thread-safe: one thread at a time per fk_model.
 */
#ifndef FLASHKERNEL_H
#define FLASHKERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fk_status {
    FK_OK = 0,
    FK_ERR_INVALID_ARGUMENT = -1, /* a value passed by the caller is out of range */
    FK_ERR_IO = -2,               /* a file is missing or cannot be read */
    FK_ERR_FORMAT = -3,           /* a file is malformed (JSON, safetensors header, shapes) */
    FK_ERR_UNSUPPORTED = -4,      /* well-formed but not supported (architecture, dtype, rope type) */
    FK_ERR_OUT_OF_MEMORY = -5,    /* host or device allocation failed */
    FK_ERR_DEVICE = -6,           /* the requested device is unavailable or failed */
} fk_status;

#define FK_ERROR_MESSAGE_MAX 512

typedef struct fk_error {
    fk_status status;
    char message[FK_ERROR_MESSAGE_MAX];
} fk_error;

/* A short name for a status ("invalid argument", "format error", ...). Never NULL. */
const char *fk_status_name(fk_status status);

/* ---- Model level: load a directory, logits, one-sequence generation ---- */

typedef struct fk_model fk_model;

typedef enum fk_device {
    FK_DEVICE_AUTO = 0, /* CUDA when built in and a GPU is present, else CPU */
    FK_DEVICE_CPU = 1,
    FK_DEVICE_CUDA = 2,
} fk_device;

typedef struct fk_model_params {
    fk_device device;
    int n_threads;      /* CPU threads for the CPU backend; 0 = one per core */
    int prefill_chunk;  /* most tokens one forward pass takes; longer prompts run in chunks (default 512) */
    int kv_block_size;  /* tokens per KV cache block (default 16) */
} fk_model_params;

fk_model_params fk_model_params_default(void);

/* Loads a Hugging Face model directory: config.json, model.safetensors or shards listed in
 * model.safetensors.index.json, and the optional generation_config.json (its eos_token_id overrides
 * config.json's). Supported: LlamaForCausalLM, GPT2LMHeadModel.
 * Errors: FK_ERR_IO (missing/unreadable file), FK_ERR_FORMAT (malformed JSON or safetensors, missing tensor,
 * wrong shape), FK_ERR_UNSUPPORTED (architecture, dtype, rope type, activation), FK_ERR_INVALID_ARGUMENT
 * (params), FK_ERR_OUT_OF_MEMORY, FK_ERR_DEVICE. tokenizer.json, when the directory has one, is loaded too
 * (fk_model_tokenizer) and a broken one fails the load with its message. On failure *out is NULL and nothing is
 * leaked. */
fk_status fk_model_load(const char *dir, const fk_model_params *params, fk_model **out, fk_error *err);

/* Frees the model and everything it owns. NULL is allowed. */
void fk_model_free(fk_model *model);

#define FK_MAX_EOS_IDS 8

typedef struct fk_model_info {
    const char *architecture; /* "LlamaForCausalLM" or "GPT2LMHeadModel"; owned by the model */
    const char *device;       /* backend name: "cpu" or "cuda" */
    int vocab_size;
    int n_layers;
    int hidden_size;
    int n_heads;
    int n_kv_heads;
    int head_dim;
    int max_context;          /* max_position_embeddings (Llama) or n_positions (GPT-2) */
    int bos_id;               /* -1 when the model has none */
    int n_eos;                /* number of valid entries in eos_ids */
    int32_t eos_ids[FK_MAX_EOS_IDS];
} fk_model_info;

/* Describes a loaded model. Never fails for a valid model. */
fk_model_info fk_model_get_info(const fk_model *model);

/* Logits of a prompt, computed from an empty cache.
 * ids: [n_ids], each in [0, vocab); 1 <= n_ids <= max_context.
 * logits: [n_ids][vocab] when all_positions, else [vocab] for the last position only.
 * Errors: FK_ERR_INVALID_ARGUMENT (empty prompt, id out of range, too long), FK_ERR_OUT_OF_MEMORY,
 * FK_ERR_DEVICE. */
fk_status fk_model_logits(fk_model *model, const int32_t *ids, int n_ids, bool all_positions, float *logits,
                          fk_error *err);

typedef enum fk_finish_reason {
    FK_FINISH_NONE = 0,   /* still running */
    FK_FINISH_LENGTH = 1, /* max_tokens reached */
    FK_FINISH_EOS = 2,    /* an end-of-sequence id was generated (and ignore_eos was false) */
} fk_finish_reason;

/* "length", "eos" or "none". */
const char *fk_finish_reason_name(fk_finish_reason reason);

typedef struct fk_generate_params {
    int max_tokens;    /* >= 1; default 16 */
    float temperature; /* 0 = greedy (default); > 0 samples from softmax(logits / temperature), <= 2 */
    uint64_t seed;     /* RNG seed for temperature > 0; the same seed gives the same tokens */
    bool ignore_eos;   /* keep going past end-of-sequence ids */
} fk_generate_params;

fk_generate_params fk_generate_params_default(void);

/* Generates up to params->max_tokens tokens after the prompt, one sequence.
 * out_ids must hold params->max_tokens entries; *n_out receives how many were written, *reason why it
 * stopped (the eos id, when it ends the sequence, is included in out_ids).
 * Errors: FK_ERR_INVALID_ARGUMENT (empty prompt, id out of range, prompt + max_tokens > max_context,
 * temperature not finite or outside [0, 2], max_tokens < 1), FK_ERR_OUT_OF_MEMORY, FK_ERR_DEVICE. */
fk_status fk_model_generate(fk_model *model, const int32_t *prompt, int n_prompt, const fk_generate_params *params,
                            int32_t *out_ids, int *n_out, fk_finish_reason *reason, fk_error *err);

/* ---- Tokenizer ---- */

/* A Hugging Face tokenizer.json: BPE (GPT-2, Llama-2, Llama-3 families) with its normalizer, pre-tokenizer,
 * post-processor and decoder, giving the ids Hugging Face tokenizers gives. Immutable once loaded: any number of
 * threads may encode and decode with one tokenizer at the same time. */
typedef struct fk_tokenizer fk_tokenizer;

/* Loads a tokenizer.json. Errors: FK_ERR_IO, FK_ERR_FORMAT (malformed JSON / fields, regex that does not compile),
 * FK_ERR_UNSUPPORTED (unknown model/normalizer/pre_tokenizer/post_processor/decoder type, naming it). */
fk_status fk_tokenizer_load(const char *path, fk_tokenizer **out, fk_error *err);

void fk_tokenizer_free(fk_tokenizer *tok);

/* Highest id + 1, added tokens included. */
int fk_tokenizer_vocab_size(const fk_tokenizer *tok);

/* Encodes UTF-8 text (len bytes, need not be NUL-terminated). add_special applies the post-processor template
 * (e.g. BOS). *ids is malloc'd; release with fk_free. Invalid UTF-8: FK_ERR_INVALID_ARGUMENT "text is not valid
 * UTF-8 at byte N" (Hugging Face takes only Unicode strings and refuses anything else). */
fk_status fk_tokenizer_encode(const fk_tokenizer *tok, const char *text, size_t len, bool add_special, int32_t **ids,
                              int *n_ids, fk_error *err);

/* Decodes ids to UTF-8 (*text malloc'd, NUL-terminated, *len bytes; fk_free). Invalid byte sequences from
 * byte-level/byte-fallback tokens become U+FFFD as Hugging Face's decode does. An id out of range:
 * FK_ERR_INVALID_ARGUMENT naming it. */
fk_status fk_tokenizer_decode(const fk_tokenizer *tok, const int32_t *ids, int n_ids, bool skip_special, char **text,
                              size_t *len, fk_error *err);

/* Releases memory the library returned (ids, text). NULL allowed. */
void fk_free(void *p);

/* The model's tokenizer (tokenizer.json in its directory), or NULL when the directory has none. Owned by the
 * model. */
const fk_tokenizer *fk_model_tokenizer(const fk_model *model);

#ifdef __cplusplus
}
#endif

#endif /* FLASHKERNEL_H */
