/* sse.h — an incremental Server-Sent Events parser: bytes in as they arrive (split anywhere), the data of each
 * complete event out. Follows the WHATWG rules: lines end in CRLF, LF or CR; "data:" lines are joined with LF; a
 * blank line ends the event; ':' lines are comments (keep-alive pings); other fields are ignored. */
#ifndef FK_LOADTEST_SSE_H
#define FK_LOADTEST_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Called with the data of each event (NUL-terminated; n bytes); false stops the parser. */
typedef bool (*sse_event_fn)(void *user, const char *data, size_t n, double t);

typedef struct sse {
    buf line;         /* the line being read */
    buf data;         /* the event being read: its data lines, each followed by LF */
    bool has_data;    /* a data field was seen in this event */
    bool after_cr;    /* the last byte was CR: a LF right after it belongs to the same line end */
    size_t max_event; /* longest line or event accepted, in bytes */
} sse;

void sse_init(sse *p, size_t max_event);
/* 0; -1 when a line or event is longer than max_event or memory runs out; -2 when the callback returned false. */
int sse_feed(sse *p, const char *s, size_t n, double t, sse_event_fn fn, void *user);
void sse_free(sse *p);

#endif
