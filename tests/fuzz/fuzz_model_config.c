/* fuzz_model_config.c — libFuzzer harness for config.json and generation_config.json, read through
 * model_config_load as the model loader reads them. The input is config.json; when it holds a NUL byte, what follows
 * the first one is generation_config.json (otherwise there is none).
 *
 * Checks, when the files are accepted: the sizes the loader allocates by are positive and within its documented
 * bounds, heads divide evenly (query heads by KV heads), head_dim is even for RoPE, the eos and bos ids are inside
 * the vocabulary, and RoPE's inverse frequencies (into a buffer of exactly head_dim / 2 floats, which
 * AddressSanitizer watches) are finite and positive. A failed check aborts (libFuzzer keeps the input). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_files.h"
#include "model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    const size_t config_len = nul ? (size_t)(nul - data) : size;
    fuzz_write("config.json", data, config_len);
    if (nul)
        fuzz_write("generation_config.json", nul + 1, size - config_len - 1);
    else
        fuzz_remove("generation_config.json");
    model_config c;
    fk_error err = {0};
    if (model_config_load(fuzz_dir(), &c, &err) != FK_OK) {
        CHECK(err.message[0], "a refusal without a message");
        return 0;
    }
    CHECK(c.vocab_size >= 1 && c.vocab_size <= (1 << 22), "vocab_size %d", c.vocab_size);
    CHECK(c.hidden_size >= 1 && c.hidden_size <= (1 << 17), "hidden_size %d", c.hidden_size);
    CHECK(c.intermediate_size >= 1 && c.intermediate_size <= (1 << 19), "intermediate_size %d", c.intermediate_size);
    CHECK(c.n_layers >= 1 && c.n_layers <= 1024, "n_layers %d", c.n_layers);
    CHECK(c.n_heads >= 1 && c.n_kv_heads >= 1 && c.n_heads % c.n_kv_heads == 0, "heads %d / %d", c.n_heads,
          c.n_kv_heads);
    CHECK(c.head_dim >= 1 && (int64_t)c.n_heads * c.head_dim <= (1 << 17), "head_dim %d", c.head_dim);
    CHECK(c.max_context >= 1 && c.max_context <= (1 << 24), "max_context %d", c.max_context);
    CHECK(c.norm_eps >= 0 && c.norm_eps <= 1, "norm_eps %g", c.norm_eps);
    CHECK(c.n_eos >= 0 && c.n_eos <= FK_MAX_EOS_IDS, "n_eos %d", c.n_eos);
    for (int i = 0; i < c.n_eos; i++)
        CHECK(c.eos_ids[i] >= 0 && c.eos_ids[i] < c.vocab_size, "eos id %d", c.eos_ids[i]);
    CHECK(c.bos_id >= -1 && c.bos_id < c.vocab_size, "bos id %d", c.bos_id);
    if (c.arch == ARCH_LLAMA) {
        CHECK(c.head_dim % 2 == 0, "odd head_dim %d with RoPE", c.head_dim);
        float *inv_freq = malloc((size_t)(c.head_dim / 2) * sizeof *inv_freq);
        model_config_rope_inv_freq(&c, inv_freq);
        for (int i = 0; i < c.head_dim / 2; i++)
            CHECK(isfinite(inv_freq[i]) && inv_freq[i] >= 0, "inv_freq[%d] = %g (rope_theta %g, factor %g)", i,
                  inv_freq[i], c.rope_theta, c.rope_factor);
        free(inv_freq);
    }
    return 0;
}
