/* model.h — the loaded model (struct fk_model) and its forward pass over a batch. */
#ifndef FK_MODEL_H
#define FK_MODEL_H

#include "backend.h"
#include "batch.h"
#include "kv_cache.h"
#include "model_config.h"
#include "model_weights.h"

/* A recorded decode pass, for one (sequence bucket, block-table width) of forward_ws. When profiling, its marks and
 * their op classes are those of the pass it recorded (a replay restores the classes: the eager passes in between
 * mark other sequences of ops); mark_class is then malloc'd, else NULL. */
typedef struct forward_graph {
    void *graph;
    int n_marks;
    uint8_t *mark_class;
} forward_graph;

/* Passes with prefill chunks of up to the last of these token counts run the layers' non-attention parts as
 * recorded pieces (piecewise graphs), at the next count up; the padding rows compute what they will and store no
 * KV. Finer where a step is mostly weight reads anyway (the counts cost about the same up to ~256 tokens). */
#define PIECE_BUCKETS 14
#define PIECE_BUCKET_TOKENS {16, 32, 48, 64, 80, 96, 112, 128, 192, 256, 320, 384, 448, 512}

/* Device buffers for forward passes of up to max_tokens tokens, max_seqs sequences of up to max_blocks blocks,
 * and max_logits logit rows. Allocated once; nothing is allocated per pass. */
typedef struct forward_ws {
    int max_tokens, max_seqs, max_blocks, max_logits;
    void *residual, *normed, *qkv, *attn, *proj; /* [max_tokens][...] activations */
    void *mlp_in, *mlp_act;                      /* [max_tokens][2 f] and [max_tokens][f] */
    void *last_normed;                           /* [max_logits][d] */
    void *logits;                                /* [max_logits][vocab] */
    void *attn_scratch;                          /* the backend's attention scratch, or NULL */
    int32_t *tokens;                             /* [max_logits]: the token sampled from each logits row */
    sample_row *sample_rows;                     /* [max_logits]: how to sample it */
    /* The batch's index arrays, packed into one device buffer per pass (one upload); these point into it. */
    int32_t *ids, *positions, *slots, *query_start, *context_len, *block_tables, *logit_rows;
    int32_t *index_dev;
    size_t index_cap; /* int32s */
    /* Host staging in host_alloc memory, two of each, used by turns (slot = pass parity), so that a pass's uploads
     * and its tokens' download can be in flight while the host prepares the next pass. */
    int32_t *index_host[2];     /* [index_cap] */
    sample_row *rows_host[2];   /* [max_logits] */
    int32_t *tokens_host[2];    /* [max_logits] */
    int slot;                   /* the slot of the last pass */
    /* Decode passes (one token per sequence) replayed as graphs where the backend has them; only for a KV cache
     * that never moves (the engine's), since a graph keeps the cache's addresses. */
    bool graphs;
    /* A decode pass of n sequences is padded to the first bucket_seqs >= n, its block tables to the first widths >=
     * their width, and replayed from graph[width index * n_buckets + bucket index] (recorded on first use, or all at
     * once by forward_record_decode_graphs). */
    int *bucket_seqs, n_buckets; /* ascending: 1, 2, 4, 8, then steps of 8 to 256, 32 to 1,024, 128 beyond */
    int *widths, n_widths;       /* ascending: powers of two, then max_blocks */
    forward_graph *graph;        /* [n_widths * n_buckets] */
    int n_graphs;                /* recorded so far */
    int32_t *pad; /* host copies of a decode pass padded to its bucket: 6 arrays of max_seqs + 1, the block tables */
    /* Passes with prefill chunks (graphs and mixed_graphs, not profiling): between the attentions, piece p of
     * layers p - 1 and p (p = 0: the embedding and layer 0 up to its attention; p = n_layers: the last layer's
     * rest and the final norm), recorded per bucket at engine creation (forward_record_pieces), else on first
     * use: pieces[bucket * (n_layers + 1) + p]. */
    void **pieces;
    bool recording;    /* a capture is under way: its ops are recorded, not launched */
    uint64_t launches; /* backend ops (one each, though some launch two kernels) and graph launches issued */
    int early_ops;     /* the ops that release the next kernel early on small passes (model_forward.c's EARLY_*) */
    /* Profiling (off unless asked for): before each op of a pass, a timeline mark and the op's fk_op_class; one more
     * mark ends the pass. A replayed decode pass takes both from its recording (forward_graph). */
    bool profile;
    int n_marks;
    uint8_t mark_class[PROF_MARKS];
    float mark_ms[PROF_MARKS]; /* scratch for reading them */
} forward_ws;

struct fk_model {
    model_config cfg;
    backend *be;
    model_weights w;
    fk_model_params params;
    forward_ws *ws; /* for the model-level API: one sequence, prefill_chunk tokens */
    fk_tokenizer *tok; /* DIR/tokenizer.json, or NULL when the directory has none */
    double load_s;     /* how long fk_model_load took */
};

fk_status forward_ws_create(const fk_model *m, int max_tokens, int max_seqs, int max_blocks, int max_logits,
                            bool graphs, bool mixed_graphs, bool profile, forward_ws **out, fk_error *err);
void forward_ws_free(const fk_model *m, forward_ws *ws);

/* Records the decode graph of every (sequence bucket, block-table width) that has none (no-op without graphs), by
 * running a pass of padding sequences through each, so that no step waits for a recording (~15 ms each for bench-1b
 * on an H100). Call once kv exists, before the first pass. */
fk_status forward_record_decode_graphs(fk_model *m, forward_ws *ws, const kv_cache *kv, fk_error *err);

/* Records every piece graph the passes with prefill chunks will replay (no-op without them), so that no request
 * waits for a recording: (n_layers + 1) graphs per token bucket up to max_tokens. Call once kv exists. */
fk_status forward_record_pieces(fk_model *m, forward_ws *ws, const kv_cache *kv, fk_error *err);

/* Runs the batch through the model, writing K/V into kv and the logits of b->logit_rows into ws->logits on the
 * device. b must fit ws. */
fk_status model_forward(fk_model *m, forward_ws *ws, const kv_cache *kv, const batch *b, fk_error *err);

/* The last forward pass's n_rows logit rows, as float32 on the host: logits [n_rows][vocab]. */
fk_status model_fetch_logits(fk_model *m, forward_ws *ws, int n_rows, float *logits, fk_error *err);

/* A token for each of the last forward pass's n_rows logit rows, sampled where the logits are with rows[n_rows]:
 * only the token ids cross to the host. model_sample_begin enqueues the sampling and the ids' download and returns
 * at once (the ids also stay in ws->tokens on the device, where the next pass's embedding reads its placeholder ids'
 * tokens);
 * model_sample_wait(slot = ws->slot of that pass) waits for them and points *tokens at them (valid until the pass
 * after next). Between the two the host may build and launch one more pass (the overlapped step). */
fk_status model_sample_begin(fk_model *m, forward_ws *ws, const sample_row *rows, int n_rows, fk_error *err);
fk_status model_sample_wait(fk_model *m, forward_ws *ws, int slot, const int32_t **tokens, fk_error *err);

/* Profiling: adds the device time of each op of the last pass (and its sampling) to op_s[fk_op_class], seconds,
 * counts the ops in ops[fk_op_class], and starts the marks afresh. Waits for the device. */
fk_status model_profile_take(fk_model *m, forward_ws *ws, double op_s[FK_OP_CLASSES], uint64_t ops[FK_OP_CLASSES],
                             fk_error *err);

#endif
