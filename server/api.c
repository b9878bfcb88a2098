/* api.c — what every part of the HTTP API's JSON shares: error values, the output buffer, finish reason names, and
 * the status of an engine error. Requests are parsed in api_parse*.c, responses rendered in api_render*.c. */
#include "api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drops a UTF-8 sequence that truncation cut short at the end of s. */
static void trim_utf8(char *s)
{
    size_t n = strlen(s), k = 0;
    while (k < n && k < 4 && ((unsigned char)s[n - 1 - k] & 0xC0) == 0x80)
        k++;
    if (k < n) {
        const unsigned char lead = (unsigned char)s[n - 1 - k];
        const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (need > k + 1)
            s[n - 1 - k] = '\0';
    }
}

void api_error_set(api_error *e, int status, const char *type, const char *param, const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    trim_utf8(e->param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    trim_utf8(e->message);
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
