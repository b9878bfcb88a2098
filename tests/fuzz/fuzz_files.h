/* fuzz_files.h — what the harnesses that drive a loader through its files share: one scratch directory per process
 * (removed at exit) and writing an input into it, and the check that aborts (libFuzzer then keeps the input). */
#ifndef FK_FUZZ_FILES_H
#define FK_FUZZ_FILES_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                                        \
    do {                                                                                                        \
        if (!(cond)) {                                                                                          \
            fprintf(stderr, "check failed: %s: ", #cond);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                       \
            fprintf(stderr, "\n");                                                                              \
            abort();                                                                                            \
        }                                                                                                       \
    } while (0)

/* The scratch directory: made on the first call (under $TMPDIR, else /dev/shm when writable, else /tmp), removed with
 * its files at exit. */
const char *fuzz_dir(void);

/* Writes len bytes to fuzz_dir()/name, replacing it; returns the file's path (valid until the next call). */
const char *fuzz_write(const char *name, const void *data, size_t len);

/* Removes fuzz_dir()/name if it exists. */
void fuzz_remove(const char *name);

#endif
