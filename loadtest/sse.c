/* sse.c — Server-Sent Events parsing, one byte range at a time. An event's bytes may come in any number of
 * pieces (chunked transfer coding and TCP split them anywhere), so the line and event under construction are
 * kept between calls. */
#include "sse.h"

#include <string.h>

void sse_init(sse *p, size_t max_event)
{
    *p = (sse){.max_event = max_event};
}

void sse_free(sse *p)
{
    buf_free(&p->line);
    buf_free(&p->data);
}

/* One complete line (without its end). */
static int sse_line(sse *p, double t, sse_event_fn fn, void *user)
{
    const char *s = p->line.s ? p->line.s : "";
    size_t n = p->line.len;
    if (n == 0) { /* blank line: dispatch */
        int r = 0;
        if (p->has_data) {
            size_t len = p->data.len ? p->data.len - 1 : 0; /* without the last data line's LF */
            if (p->data.s)
                p->data.s[len] = 0;
            if (!fn(user, p->data.s ? p->data.s : "", len, t))
                r = -2;
        }
        p->data.len = 0;
        p->has_data = false;
        return r;
    }
    if (s[0] == ':')
        return 0; /* comment */
    const char *colon = memchr(s, ':', n);
    size_t name_len = colon ? (size_t)(colon - s) : n;
    if (name_len != 4 || memcmp(s, "data", 4))
        return 0;
    const char *v = colon ? colon + 1 : s + n;
    if (v < s + n && *v == ' ')
        v++;
    size_t v_len = (size_t)(s + n - v);
    if (p->data.len + v_len + 1 > p->max_event)
        return -1;
    if (!buf_append(&p->data, v, v_len) || !buf_append(&p->data, "\n", 1))
        return -1;
    p->has_data = true;
    return 0;
}

int sse_feed(sse *p, const char *s, size_t n, double t, sse_event_fn fn, void *user)
{
    size_t i = 0;
    while (i < n) {
        if (p->after_cr && s[i] == '\n') { /* the LF of a CRLF whose CR came last time */
            p->after_cr = false;
            i++;
            continue;
        }
        p->after_cr = false;
        size_t j = i;
        while (j < n && s[j] != '\n' && s[j] != '\r')
            j++;
        if (p->line.len + (j - i) > p->max_event)
            return -1;
        if (!buf_append(&p->line, s + i, j - i))
            return -1;
        if (j == n)
            break; /* the line goes on in the next piece */
        p->after_cr = s[j] == '\r';
        if (p->after_cr && j + 1 < n && s[j + 1] == '\n') {
            p->after_cr = false;
            j++;
        }
        int r = sse_line(p, t, fn, user);
        p->line.len = 0;
        if (r)
            return r;
        i = j + 1;
    }
    return 0;
}
