/* batch.c — scheduled requests → the flat int32 arrays of the KV contract (DESIGN.md): ids, positions, slot
 * mapping, query starts, context lengths, block tables, and which rows need logits. */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "scheduler.h"

fk_status batch_builder_create(int max_tokens, int max_seqs, int max_blocks, batch_builder **out, fk_error *err)
{
    batch_builder *bb = calloc(1, sizeof *bb);
    if (bb) {
        *bb = (batch_builder){.max_tokens = max_tokens, .max_seqs = max_seqs, .max_blocks = max_blocks};
        bb->ids = malloc((size_t)max_tokens * sizeof(int32_t));
        bb->positions = malloc((size_t)max_tokens * sizeof(int32_t));
        bb->slots = malloc((size_t)max_tokens * sizeof(int32_t));
        bb->query_start = malloc(((size_t)max_seqs + 1) * sizeof(int32_t));
        bb->context_len = malloc((size_t)max_seqs * sizeof(int32_t));
        bb->block_tables = malloc((size_t)max_seqs * max_blocks * sizeof(int32_t));
        bb->logit_rows = malloc((size_t)max_seqs * sizeof(int32_t));
        bb->logit_entry = malloc((size_t)max_seqs * sizeof(int32_t));
    }
    if (!bb || !bb->ids || !bb->positions || !bb->slots || !bb->query_start || !bb->context_len ||
        !bb->block_tables || !bb->logit_rows || !bb->logit_entry) {
        batch_builder_destroy(bb);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "batch arrays for %d tokens, %d sequences: out of memory",
                            max_tokens, max_seqs);
    }
    *out = bb;
    return FK_OK;
}

void batch_builder_destroy(batch_builder *bb)
{
    if (!bb)
        return;
    free(bb->ids);
    free(bb->positions);
    free(bb->slots);
    free(bb->query_start);
    free(bb->context_len);
    free(bb->block_tables);
    free(bb->logit_rows);
    free(bb->logit_entry);
    free(bb);
}

const batch *batch_build(batch_builder *bb, const sched_output *out, int block_size)
{
    int width = 1;
    for (int i = 0; i < out->n; i++)
        width = out->entries[i].req->n_blocks > width ? out->entries[i].req->n_blocks : width;
    int t = 0, n_logits = 0;
    bb->query_start[0] = 0;
    for (int i = 0; i < out->n; i++) {
        const request *r = out->entries[i].req;
        for (int k = 0; k < out->entries[i].n_new; k++, t++) {
            int pos = r->n_computed + k;
            /* The token in flight (one per sequence) is read on the device from the row it is sampled from. */
            bb->ids[t] = pos < r->n_tokens ? r->tokens[pos] : -1 - r->pending_row;
            bb->positions[t] = pos;
            bb->slots[t] = r->blocks[pos / block_size] * block_size + pos % block_size;
        }
        bb->query_start[i + 1] = t;
        bb->context_len[i] = r->n_computed + out->entries[i].n_new;
        int32_t *row = bb->block_tables + (size_t)i * width;
        memcpy(row, r->blocks, (size_t)r->n_blocks * sizeof *row);
        memset(row + r->n_blocks, 0, (size_t)(width - r->n_blocks) * sizeof *row);
        if (out->entries[i].wants_logits) {
            bb->logit_rows[n_logits] = t - 1;
            bb->logit_entry[n_logits++] = i;
        }
    }
    bb->b = (batch){
        .n_tokens = t,
        .n_seqs = out->n,
        .max_blocks = width,
        .n_logits = n_logits,
        .input_ids = bb->ids,
        .positions = bb->positions,
        .slot_mapping = bb->slots,
        .query_start = bb->query_start,
        .context_len = bb->context_len,
        .block_tables = bb->block_tables,
        .logit_rows = bb->logit_rows,
    };
    return &bb->b;
}
