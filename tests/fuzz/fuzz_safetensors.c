/* fuzz_safetensors.c — libFuzzer harness for a .safetensors file: the input is the whole file (8-byte header length,
 * JSON header, data), opened through safetensors_open_file as the model loader opens it (mmap).
 *
 * Checks, when the file is accepted: every tensor is found by its name, its byte count is its element count times
 * an element size of 1, 2, 4 or 8 bytes (and 0 elements, 0 bytes), and the tensors' bytes add up to no more than the
 * data section (they do not overlap); F32, F16 and BF16 tensors convert to float32 into a buffer of exactly numel
 * floats (AddressSanitizer watches it). A failed check aborts (libFuzzer keeps the input). */
#include <stdint.h>
#include <string.h>

#include "fuzz_files.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("model.safetensors", data, size);
    safetensors *st;
    fk_error err = {0};
    if (safetensors_open_file(path, &st, &err) != FK_OK) {
        CHECK(err.message[0], "a refusal without a message");
        return 0;
    }
    uint64_t total = 0;
    for (int i = 0; i < safetensors_count(st); i++) {
        const st_tensor *t = safetensors_at(st, i);
        CHECK(safetensors_find(st, t->name) == t, "tensor \"%s\" is not found by its name", t->name);
        CHECK(t->ndim >= 0 && t->ndim <= ST_MAX_DIMS && t->numel >= 0, "tensor \"%s\": ndim %d", t->name, t->ndim);
        int64_t numel = 1;
        for (int d = 0; d < t->ndim; d++)
            numel *= t->shape[d];
        CHECK(numel == t->numel, "tensor \"%s\": numel %lld, shape says %lld", t->name, (long long)t->numel,
              (long long)numel);
        const size_t elem = t->numel ? t->nbytes / (size_t)t->numel : 0;
        CHECK(t->numel ? (elem == 1 || elem == 2 || elem == 4 || elem == 8) && elem * (size_t)t->numel == t->nbytes
                       : t->nbytes == 0,
              "tensor \"%s\": %zu bytes for %lld elements", t->name, t->nbytes, (long long)t->numel);
        total += t->nbytes;
        CHECK(total <= size - 8, "the tensors hold %llu bytes; the file has %zu", (unsigned long long)total, size);
        if (t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16) {
            float *f = malloc((size_t)t->numel * sizeof *f + 1);
            CHECK(st_tensor_to_f32(t, f, &err) == FK_OK, "%s", err.message);
            free(f);
        }
    }
    safetensors_close(st);
    return 0;
}
