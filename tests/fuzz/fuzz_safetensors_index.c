/* fuzz_safetensors_index.c — libFuzzer harness for model.safetensors.index.json: the input is the index, opened
 * through safetensors_open_dir (as the model loader opens a sharded directory) beside two valid shards that the
 * harness writes once: a.safetensors holds "x" and "y", b.safetensors holds "z".
 *
 * Checks, when the index is accepted: only tensors of the shards come out, each in the shard that holds it, found by
 * its name, with its own bytes (each tensor's bytes are its letter, so a wrong file or offset shows). A failed check
 * aborts (libFuzzer keeps the input). */
#include <stdint.h>
#include <string.h>

#include "fuzz_files.h"
#include "safetensors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A shard: the header for the given tensor names (U8, shape [4], consecutive), then each tensor's 4 bytes, all
 * equal to its letter. */
static void write_shard(const char *file, const char *names)
{
    char header[256] = "{", data[16];
    size_t n = strlen(names);
    for (size_t i = 0; i < n; i++) {
        char entry[96];
        snprintf(entry, sizeof entry, "%s\"%c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[%zu,%zu]}",
                 i ? "," : "", names[i], 4 * i, 4 * i + 4);
        strcat(header, entry);
        memset(data + 4 * i, names[i], 4);
    }
    strcat(header, "}");
    const uint64_t hl = strlen(header);
    unsigned char file_bytes[8 + sizeof header + sizeof data];
    for (int b = 0; b < 8; b++)
        file_bytes[b] = (unsigned char)(hl >> (8 * b));
    memcpy(file_bytes + 8, header, hl);
    memcpy(file_bytes + 8 + hl, data, 4 * n);
    fuzz_write(file, file_bytes, 8 + hl + 4 * n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    write_shard("a.safetensors", "xy");
    write_shard("b.safetensors", "z");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write("model.safetensors.index.json", data, size);
    safetensors *st;
    fk_error err = {0};
    if (safetensors_open_dir(fuzz_dir(), &st, &err) != FK_OK) {
        CHECK(err.message[0], "a refusal without a message");
        return 0;
    }
    CHECK(safetensors_count(st) >= 1 && safetensors_count(st) <= 3, "%d tensors", safetensors_count(st));
    for (int i = 0; i < safetensors_count(st); i++) {
        const st_tensor *t = safetensors_at(st, i);
        const char *want = !strcmp(t->name, "z") ? "/b.safetensors" : "/a.safetensors";
        CHECK(strlen(t->name) == 1 && strchr("xyz", t->name[0]), "unknown tensor \"%s\"", t->name);
        CHECK(safetensors_find(st, t->name) == t, "tensor \"%s\" is not found by its name", t->name);
        CHECK(strlen(t->file) >= strlen(want) && !strcmp(t->file + strlen(t->file) - strlen(want), want),
              "tensor \"%s\" comes from %s", t->name, t->file);
        char bytes[4];
        CHECK(t->nbytes == 4 && st_tensor_read(t, bytes, &err) == FK_OK &&
                  !memcmp(bytes, (char[4]){t->name[0], t->name[0], t->name[0], t->name[0]}, 4),
              "tensor \"%s\": wrong bytes", t->name);
    }
    safetensors_close(st);
    return 0;
}
