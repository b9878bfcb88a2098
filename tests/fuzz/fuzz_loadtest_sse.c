/* fuzz_loadtest_sse.c — libFuzzer harness for the load tester's Server-Sent Events parser (loadtest/sse.c): the input
 * is a stream's bytes; byte 0 steers where it is cut into pieces and the longest event allowed.
 *
 * Checks: fed in pieces, the parser gives exactly the events (data and count) and the result it gives fed all at
 * once — bytes arrive cut anywhere (TCP, chunked transfer coding), so where they are cut must not matter; every
 * event's data is NUL-terminated at its length and no longer than the limit. A failed check aborts (libFuzzer keeps
 * the input). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "fuzz_files.h"
#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct events {
    buf all; /* each event: its length (size_t), then its bytes */
    size_t n, max_event;
} events;

static bool on_event(void *user, const char *data, size_t n, double t)
{
    (void)t;
    events *e = user;
    CHECK(data[n] == 0, "event data not NUL-terminated");
    CHECK(n < e->max_event, "an event of %zu bytes passed the limit of %zu", n, e->max_event);
    CHECK(buf_append(&e->all, &n, sizeof n) && buf_append(&e->all, data, n), "out of memory");
    e->n++;
    return true;
}

/* Feeds s[len] in pieces of 1 to `step` bytes (step 0: all at once). Returns sse_feed's first non-zero result. */
static int feed(const char *s, size_t len, size_t step, size_t max_event, events *e)
{
    sse p;
    sse_init(&p, max_event);
    *e = (events){.max_event = max_event};
    int rc = 0;
    uint32_t lcg = (uint32_t)len * 2654435761u;
    for (size_t at = 0; at < len && !rc;) {
        size_t n = len - at;
        if (step) {
            lcg = lcg * 1664525u + 1013904223u;
            n = 1 + (lcg >> 8) % step;
            n = n < len - at ? n : len - at;
        }
        rc = sse_feed(&p, s + at, n, 0, on_event, e);
        at += n;
    }
    sse_free(&p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *s = (const char *)data + 1;
    const size_t len = size - 1, max_event = 16 + (size_t)(data[0] & 0x0f) * 64, step = 1 + (data[0] >> 4);
    events whole, pieces;
    const int rc_whole = feed(s, len, 0, max_event, &whole);
    const int rc_pieces = feed(s, len, step, max_event, &pieces);
    CHECK(rc_whole == rc_pieces, "all at once: %d, in pieces of up to %zu bytes: %d", rc_whole, step, rc_pieces);
    CHECK(whole.n == pieces.n && whole.all.len == pieces.all.len &&
              (!whole.all.len || !memcmp(whole.all.s, pieces.all.s, whole.all.len)),
          "%zu events all at once, %zu in pieces of up to %zu bytes (or different data)", whole.n, pieces.n, step);
    buf_free(&whole.all);
    buf_free(&pieces.all);
    return 0;
}
