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

/* ---- Model level: load a directory, describe it, logits of a prompt ---- */

typedef struct fk_model fk_model;

typedef enum fk_device {
    FK_DEVICE_AUTO = 0, /* CUDA when built in and a GPU is present, else CPU */
    FK_DEVICE_CPU = 1,
    FK_DEVICE_CUDA = 2,
} fk_device;

/* Weight-only quantization of the linear layers, done at load from the checkpoint's weights (round to nearest):
 * activations stay fp16 (fp32 on the CPU), products accumulate in fp32. */
typedef enum fk_quantization {
    FK_QUANT_NONE = 0, /* the backend's own format: fp16 on a GPU, fp32 on the CPU */
    FK_QUANT_INT8 = 1, /* int8, symmetric, one fp16 scale per output row */
    FK_QUANT_INT4 = 2, /* 4 bits, per group of 128 inputs an fp16 scale and a zero point; the input size of every
                        * quantized layer must be a multiple of 128 */
} fk_quantization;

/* "none", "int8", "int4" ("?" for anything else). */
const char *fk_quantization_name(fk_quantization q);

typedef struct fk_model_params {
    fk_device device;
    int n_threads;      /* CPU threads for the CPU backend; 0 = one per core */
    int prefill_chunk;  /* most tokens one forward pass takes; longer prompts run in chunks (default 512) */
    int kv_block_size;  /* tokens per KV cache block (default 16) */
    fk_quantization quantization; /* of every linear layer of the blocks (default FK_QUANT_NONE); embeddings, norms
                                   * and biases stay in the backend's format */
    bool quantize_lm_head;        /* the output head too (a tied head gets a quantized copy of the embedding) */
} fk_model_params;

fk_model_params fk_model_params_default(void);

/* Loads a Hugging Face model directory: config.json, model.safetensors or shards listed in
 * model.safetensors.index.json, and the optional generation_config.json (its eos_token_id overrides
 * config.json's). Supported: LlamaForCausalLM, GPT2LMHeadModel.
 * Errors: FK_ERR_IO (missing/unreadable file), FK_ERR_FORMAT (malformed JSON or safetensors, missing tensor,
 * wrong shape), FK_ERR_UNSUPPORTED (architecture, dtype, rope type, activation, a layer whose input size the
 * quantization's group size does not divide: the message names the tensor and the size), FK_ERR_INVALID_ARGUMENT
 * (params), FK_ERR_OUT_OF_MEMORY, FK_ERR_DEVICE. tokenizer.json, when the directory has one, is loaded too
 * (fk_model_tokenizer) and a broken one fails the load with its message. On failure *out is NULL and nothing is
 * leaked. */
fk_status fk_model_load(const char *dir, const fk_model_params *params, fk_model **out, fk_error *err);

/* Frees the model and everything it owns. NULL is allowed. */
void fk_model_free(fk_model *model);

#define FK_MAX_EOS_IDS 8

typedef struct fk_model_info {
    const char *architecture; /* config.json's: "LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM" or
                                 "GPT2LMHeadModel"; owned by the model */
    const char *device;       /* backend name: "cpu" or "cuda" */
    int vocab_size;
    int n_layers;
    int hidden_size;
    int n_heads;
    int n_kv_heads;
    int head_dim;
    int max_context;          /* max_position_embeddings (n_positions for GPT-2), or Mistral's sliding_window
                                 where that is smaller (attention has no window mask) */
    int bos_id;               /* -1 when the model has none */
    int n_eos;                /* number of valid entries in eos_ids */
    int32_t eos_ids[FK_MAX_EOS_IDS];
    fk_quantization quantization;
    bool quantize_lm_head;
    size_t weight_bytes;       /* the weights as the backend holds them (quantized values and their scales) */
    size_t kv_bytes_per_token; /* K and V of one token in every layer, as the backend's KV cache holds them */
    double load_s;             /* seconds fk_model_load took, quantization included */
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
    FK_FINISH_STOP = 3,   /* a stop string was generated (the text ends before it) */
    FK_FINISH_CANCEL = 4, /* cancelled by the caller */
    FK_FINISH_ERROR = 5,  /* the engine failed (device error); the request is lost */
} fk_finish_reason;

/* "length", "eos", "stop", "cancel", "error" or "none". */
const char *fk_finish_reason_name(fk_finish_reason reason);

/* ---- Engine level: many requests on one model, continuous batching over a paged KV cache ---- */

typedef struct fk_engine fk_engine;

typedef struct fk_engine_params {
    int block_size;             /* tokens per KV block (default 16) */
    int num_blocks;             /* KV pool size in blocks; 0 = from kv_cache_mb */
    int kv_cache_mb;            /* KV pool budget in MiB when num_blocks is 0; 0 (default) = automatic: on a GPU what
                                 * gpu_memory_utilization of its memory leaves after weights and workspaces, on the
                                 * CPU 512 MiB */
    float gpu_memory_utilization; /* (0, 1]: the share of GPU memory FlashKernel may use (default 0.9) */
    int max_num_seqs;           /* sequences running at once (default 256) */
    int max_num_batched_tokens; /* tokens one step computes: decodes and prefill chunks together; 0 (default) =
                                 * fk_default_batched_tokens(model) */
    int max_model_len;          /* prompt + generated tokens per request; 0 = the model's max_context */
    bool enable_prefix_caching; /* reuse the KV blocks of identical prompt prefixes (default true) */
    int fault_after_steps;      /* test hook: after this many steps the device is made to fail as a real fault would
                                 * (on a GPU a sticky illegal-address error); 0 = never (default) */
    bool profile;               /* time every op of every step (device events around each op on a GPU, wall time on
                                 * the CPU) for fk_engine_get_profile; costs a little per op; off by default; steps
                                 * then run one at a time */
    bool overlap;               /* overlapped steps (default true): fk_engine_step enqueues a step and then finishes
                                 * the one before it (its tokens, events and finishes) while the device computes, so
                                 * events come one step later; the tokens are the same as with false. Steps run one
                                 * at a time anyway while a request needs the host sampler (logprobs, penalties) */
    bool mixed_graphs;          /* steps with prefill chunks of up to 512 tokens replay graphs of the layers' parts
                                 * between attentions, at a padded token count, recorded when the engine is created
                                 * (default true; on backends with graphs, not while profiling). Decode-only steps
                                 * replay whole-step graphs anyway */
    bool decode_graphs_at_start; /* on backends with graphs, record the graph of every decode-only step shape (each
                                  * sequence bucket at each block-table width) when the engine is created, so that
                                  * no step waits for a recording (each takes ~15 ms for a 1B model on an H100, which
                                  * stalls every running request); creation then takes longer (bench-1b, 256
                                  * sequences, 4,096 tokens: 315 graphs). Default false: each is recorded the first
                                  * time a step needs it (flashkernel-server turns it on) */
} fk_engine_params;

fk_engine_params fk_engine_params_default(void);

/* The step's token budget when max_num_batched_tokens is 0: 4096 for a model of up to 4 billion parameters in its
 * blocks' linears, halved for each doubling above (2048 for Llama-3-8B's 7.0 billion), at least 512. A prefill
 * chunk's work grows with the model, and the decodes that share its step wait for it: measured on a 1B- and an
 * 8B-shaped model (docs/BENCHMARKS.md, "Serving throughput ... the scheduler's token budget" and "Decode on an
 * H200"). */
int fk_default_batched_tokens(const fk_model *model);

/* Creates an engine over a loaded model (which must outlive it) and allocates its KV pool and workspaces; nothing
 * is allocated per step. Errors: FK_ERR_INVALID_ARGUMENT (a parameter out of range, or a pool too small for
 * one sequence of max_model_len: the message gives both sizes), FK_ERR_OUT_OF_MEMORY, FK_ERR_DEVICE. */
fk_status fk_engine_create(fk_model *model, const fk_engine_params *params, fk_engine **out, fk_error *err);

/* Frees the engine; requests still in it end without further events. NULL is allowed. */
void fk_engine_free(fk_engine *engine);

#define FK_MAX_LOGPROBS 20
#define FK_MAX_STOP 4
#define FK_MAX_STOP_BYTES 256

typedef struct fk_sampling_params {
    float temperature;        /* 0 = greedy (default); (0, 2] samples */
    float top_p;              /* (0, 1]; 1 = off (default) */
    int top_k;                /* >= 0; 0 = off (default); above the vocabulary means all of it */
    float min_p;              /* [0, 1]; 0 = off (default) */
    float repetition_penalty; /* (0, 2]; 1 = off (default); over prompt and generated tokens */
    float presence_penalty;   /* [-2, 2]; 0 = off (default); over generated tokens */
    float frequency_penalty;  /* [-2, 2]; 0 = off (default); over generated tokens */
    uint64_t seed;            /* the request's own RNG: the same seed and params give the same tokens */
    int logprobs;             /* -1 = none (default); 0 = the chosen token's; n <= 20: also the top n */
} fk_sampling_params;

typedef struct fk_logprob {
    int32_t token;
    float logprob; /* log-softmax of the model's logits, before penalties and temperature */
} fk_logprob;

/* What the engine reports for a request: one event per generated token, the last one with finish set. */
typedef struct fk_token_event {
    uint64_t request_id;
    int32_t token;          /* the new token; -1 on a final event without one (cancel, error) */
    const char *text;       /* the text it adds: complete UTF-8, possibly empty; NULL without a tokenizer */
    size_t text_len;
    float logprob;          /* the token's, when logprobs >= 0 */
    int n_top;              /* alternatives in top, when logprobs > 0 */
    const fk_logprob *top;
    fk_finish_reason finish; /* FK_FINISH_NONE while the request goes on */
    /* Filled on the final event: */
    int prompt_tokens, completion_tokens;
    int cached_tokens; /* prompt tokens served from the prefix cache at first admission */
    int preemptions;
    double queue_s;    /* submit → first scheduled */
    double prefill_s;  /* first scheduled → first token */
    double decode_s;   /* first token → finish */
} fk_token_event;

/* Called on the thread that runs fk_engine_step (or fk_engine_cancel); the event and its pointers are valid only
 * during the call. It must not call back into the engine. */
typedef void (*fk_token_callback)(const fk_token_event *event, void *user);

typedef struct fk_request_params {
    int max_tokens;          /* >= 1 (default 16) */
    bool ignore_eos;         /* keep going past end-of-sequence ids (the model's and eos_ids) */
    int32_t eos_ids[FK_MAX_EOS_IDS]; /* end-of-sequence ids of this request besides the model's (e.g. a chat
                                      * template's end-of-turn token), each in [0, vocab) */
    int n_eos;                       /* entries of eos_ids in use (default 0) */
    const char *const *stop; /* up to FK_MAX_STOP non-empty strings of <= FK_MAX_STOP_BYTES (needs a tokenizer) */
    int n_stop;
    fk_sampling_params sampling;
    fk_token_callback on_token; /* may be NULL */
    void *user;
} fk_request_params;

fk_request_params fk_request_params_default(void);

/* Queues a request; the engine copies everything it needs. *id identifies it from now on.
 * Errors (the engine is left exactly as it was): FK_ERR_INVALID_ARGUMENT for an empty prompt, an id (of the prompt
 * or of eos_ids) outside the vocabulary, prompt + max_tokens beyond max_model_len, any sampling value out of its range (the message names
 * the field and the value), stop strings without a tokenizer; FK_ERR_DEVICE once the engine has failed. */
fk_status fk_engine_submit(fk_engine *engine, const int32_t *prompt, int n_prompt, const fk_request_params *params,
                           uint64_t *id, fk_error *err);

/* One step: schedule (running decodes first, then prefill chunks, within max_num_batched_tokens), run the
 * batch, sample, and report tokens through the callbacks; finished requests free their KV blocks when their last
 * token is reported. Overlapped (params.overlap), the call enqueues the step on the device and then reports the
 * step before it while the device computes; a call with nothing new to schedule finishes the step in flight. With
 * nothing to do it returns at once. A device error marks the engine failed for good: every request gets a final
 * FK_FINISH_ERROR event and this and every later call return FK_ERR_DEVICE. */
fk_status fk_engine_step(fk_engine *engine, fk_error *err);

/* Ends a request now, whether waiting, prefilling or decoding: its blocks are freed and its callback gets a final
 * FK_FINISH_CANCEL event. Errors: FK_ERR_INVALID_ARGUMENT for an id that is unknown or already finished. */
fk_status fk_engine_cancel(fk_engine *engine, uint64_t id, fk_error *err);

/* Whether any request is waiting or running, or a step's tokens are still to be reported. */
bool fk_engine_has_work(const fk_engine *engine);

typedef struct fk_engine_stats {
    int running, waiting;
    int blocks_total, blocks_used, blocks_free, blocks_cached; /* used + free + cached = total */
    uint64_t prefix_query_tokens, prefix_hit_tokens;
    uint64_t preemptions;
    uint64_t prompt_tokens, generation_tokens; /* totals since creation */
    uint64_t steps;
    /* Device launches the host issued (each backend op counts one, though a GEMM or a fused op may launch two
     * kernels; a graph replay counts one), in decode-only steps and in steps with prefill chunks, and those steps */
    uint64_t decode_launches, decode_steps, prefill_launches, prefill_steps;
    int decode_graphs; /* decode-step graphs recorded so far (at creation with decode_graphs_at_start) */
    bool failed;
} fk_engine_stats;

fk_engine_stats fk_engine_get_stats(const fk_engine *engine);

/* The classes of ops a step profile adds up. */
typedef enum fk_op_class {
    FK_OP_LINEAR,    /* the projections and the lm_head (GEMMs, small-batch linears, their fused epilogues) */
    FK_OP_ATTENTION, /* attention over the paged KV cache */
    FK_OP_NORM,      /* residual add + RMSNorm / LayerNorm */
    FK_OP_SAMPLING,  /* choosing the next tokens where the logits are */
    FK_OP_OTHER,     /* embedding, RoPE + KV store, row gathers */
    FK_OP_CLASSES
} fk_op_class;

/* "linears", "attention", "norms", "sampling", "other kernels". */
const char *fk_op_class_name(fk_op_class op_class);

/* Where the time of a kind of step went, summed over the steps so far (fk_engine_params.profile). */
typedef struct fk_step_profile {
    uint64_t steps;
    uint64_t sequences;           /* sequences in those steps (their mean batch: sequences / steps) */
    double wall_s;                /* the steps' wall time, host work included */
    double op_s[FK_OP_CLASSES];   /* device time of each class of op; wall_s minus their sum is host time (and gaps) */
    uint64_t ops[FK_OP_CLASSES];  /* how many ops of each class those steps ran */
} fk_step_profile;

enum { FK_PROFILE_DECODE = 0, FK_PROFILE_PREFILL = 1 }; /* decode-only steps; steps with prefill chunks */

/* The profile so far: out[FK_PROFILE_DECODE] and out[FK_PROFILE_PREFILL]; all zero unless profiling is on. */
void fk_engine_get_profile(const fk_engine *engine, fk_step_profile out[2]);

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

/* ---- Chat templates ---- */

/* A Hugging Face chat template (the Jinja subset real templates use: tokenizer_config.json's `chat_template`),
 * rendered byte for byte as transformers renders it (jinja2 with trim_blocks, lstrip_blocks, loop controls,
 * tojson, raise_exception, strftime_now). Sandboxed: no file or process access; recursion depth, loop iterations
 * and output size are bounded. Immutable once loaded: any number of threads may render with one template. */
typedef struct fk_chat_template fk_chat_template;

/* Parses template source (len bytes, need not be NUL-terminated). A syntax error or a construct outside the
 * supported subset: FK_ERR_FORMAT naming the construct and its line ("line 3: unknown filter 'wordwrap'"). */
fk_status fk_chat_template_parse(const char *source, size_t len, fk_chat_template **out, fk_error *err);

void fk_chat_template_free(fk_chat_template *tmpl);

/* The template a model directory ships: tokenizer_config.json's `chat_template`, a string, or the list of
 * {name, template} objects (the one named "default"); also its bos_token and eos_token strings (plain strings or
 * {"content": ...} objects), NULL where absent. A chat_template.jinja file in the directory (transformers' newer
 * layout) takes priority over tokenizer_config.json's chat_template, as in transformers. *source, *bos and *eos are
 * malloc'd (fk_free). No tokenizer_config.json (nor chat_template.jinja) or no chat_template: FK_ERR_IO /
 * FK_ERR_UNSUPPORTED with a message saying so. */
fk_status fk_chat_template_find(const char *model_dir, char **source, char **bos, char **eos, fk_error *err);

typedef struct fk_chat_render_params {
    const char *messages_json; /* a JSON array of message objects, as the client sent them (len bytes) */
    size_t messages_len;
    bool add_generation_prompt;
    const char *bos_token; /* NULL: undefined in the template */
    const char *eos_token;
    bool fixed_now;        /* strftime_now reads `now` (seconds since the epoch, UTC) instead of the clock; either
                            * way it formats local time, as transformers' datetime.now().strftime() does */
    int64_t now;
} fk_chat_render_params;

/* Renders the template for the messages: *text malloc'd, NUL-terminated, *len bytes (fk_free). Errors:
 * FK_ERR_INVALID_ARGUMENT when the template calls raise_exception (the message is exactly
 * "TemplateError: <its message>", as transformers reports it) or when messages_json is not a JSON array;
 * FK_ERR_FORMAT for a failure while rendering (an unsupported construct reached, a type error, a limit
 * exceeded), naming it and the line. */
fk_status fk_chat_template_render(const fk_chat_template *tmpl, const fk_chat_render_params *params, char **text,
                                  size_t *len, fk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FLASHKERNEL_H */
