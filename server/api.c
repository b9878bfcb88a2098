/* api.c — what every part of the HTTP API's JSON shares: error values, the output buffer, finish reason names, and
 * the status of an engine error. Requests are parsed in api_parse*.c, responses rendered in api_render*.c. */
#include "api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* s[size] made valid UTF-8 in place: what the message echoes from the request (a path, a header, a key) may hold
 * any bytes, and truncation may have cut a character (dropped). Invalid sequences become U+FFFD; the result is cut
 * between characters to fit. */
static void valid_utf8(char *s, size_t size)
{
    size_t n = strlen(s);
    if (utf8_ends_incomplete(s, n)) { /* a character cut by the truncation: dropped, not shown as U+FFFD */
        while (((unsigned char)s[n - 1] & 0xC0) == 0x80)
            n--;
        s[--n] = '\0';
    }
    if (utf8_check(s, n) == n)
        return;
    char *fixed = malloc(3 * n + 1);
    if (!fixed) { /* out of memory: keep the valid prefix */
        s[utf8_check(s, n)] = '\0';
        return;
    }
    fixed[utf8_lossy(s, n, fixed)] = '\0';
    snprintf(s, size, "%.*s", utf8_clip(fixed, (int)size - 1), fixed);
    free(fixed);
}

void api_error_set(api_error *e, int status, const char *type, const char *param, const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    valid_utf8(e->param, sizeof e->param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    valid_utf8(e->message, sizeof e->message);
}

void api_engine_error(fk_status status, const char *message, api_error *e)
{
    if (status == FK_ERR_INVALID_ARGUMENT)
        api_error_set(e, 400, "invalid_request_error", NULL, "%s", message);
    else if (status == FK_ERR_DEVICE || status == FK_ERR_OUT_OF_MEMORY)
        api_error_set(e, 503, "server_error", NULL, "%s", message);
    else
        api_error_set(e, 500, "server_error", NULL, "%s", message);
}

const char *api_finish_name(api_kind kind, fk_finish_reason reason)
{
    switch (reason) {
    case FK_FINISH_LENGTH: return "length";
    case FK_FINISH_EOS: return kind == API_GENERATE ? "eos" : "stop";
    case FK_FINISH_STOP: return "stop";
    case FK_FINISH_CANCEL: return "abort";
    case FK_FINISH_ERROR: return "error";
    default: return "none";
    }
}

void api_buf_append(api_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void api_buf_free(api_buf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}
