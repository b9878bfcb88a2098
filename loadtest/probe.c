/* probe.c — GET /v1/models and the /detokenize bisection for the vocabulary size. */
#include "probe.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

enum { PROBE_BODY_MAX = 1024 * 1024 };

static bool collect(void *user, int status, const char *data, size_t n, double t)
{
    (void)status;
    (void)t;
    buf *b = user;
    return b->len + n <= PROBE_BODY_MAX && buf_append(b, data, n);
}

/* One exchange; *status and the body in b. */
static probe_status exchange(const http_target *t, const http_limits *lim, const char *method, const char *path,
                             const char *body, int *status, buf *b, char *err, size_t err_len)
{
    http_request rq = {.method = method, .path = path, .accept = "application/json", .body = body,
                       .body_len = body ? strlen(body) : 0};
    char why[256];
    http_error e = http_exchange(t, &rq, lim, status, collect, b, why, sizeof why);
    if (e == HTTP_OK)
        return PROBE_OK;
    snprintf(err, err_len, "%s %s%s: %s", method, t->u->prefix, path, why);
    return e == HTTP_ERR_REFUSED || e == HTTP_ERR_CONNECT || e == HTTP_ERR_TIMEOUT || e == HTTP_ERR_DROPPED ||
                   e == HTTP_ERR_INTERRUPTED
               ? PROBE_UNREACHABLE
               : PROBE_UNAVAILABLE;
}

/* obj[name] when it is a count in [1, 1e9), else 0. */
static int positive(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e9 ? (int)v->valuedouble : 0;
}

probe_status probe_model(const http_target *t, const http_limits *lim, char **model, int *max_model_len,
                         int *vocab, char *err, size_t err_len)
{
    *model = NULL;
    *max_model_len = -1;
    *vocab = 0;
    buf b = {0};
    int status;
    probe_status ps = exchange(t, lim, "GET", "/v1/models", NULL, &status, &b, err, err_len);
    if (ps != PROBE_OK) {
        buf_free(&b);
        return ps;
    }
    cJSON *root = status == 200 ? cJSON_ParseWithLength(b.s ? b.s : "", b.len) : NULL;
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "data"), 0);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m, "meta"); /* llama-server's */
    if (cJSON_IsString(id))
        *model = strdup(id->valuestring);
    int len = positive(m, "max_model_len");
    if (!len)
        len = positive(meta, "n_ctx");
    if (len)
        *max_model_len = len;
    *vocab = positive(meta, "n_vocab");
    if (!*model) {
        snprintf(err, err_len, "GET %s/v1/models: status %d, no data[0].id", t->u->prefix, status);
        ps = PROBE_UNAVAILABLE;
    }
    cJSON_Delete(root);
    buf_free(&b);
    return ps;
}

/* Whether /detokenize accepts token id `id`: 1 yes (200), 0 no (400), -1 neither (status in *status). */
static int accepts(const http_target *t, const http_limits *lim, long id, int *status, probe_status *ps, char *err,
                   size_t err_len)
{
    char body[64];
    snprintf(body, sizeof body, "{\"tokens\":[%ld]}", id);
    buf b = {0};
    *ps = exchange(t, lim, "POST", "/detokenize", body, status, &b, err, err_len);
    buf_free(&b);
    if (*ps != PROBE_OK)
        return -1;
    return *status == 200 ? 1 : *status == 400 ? 0 : -1;
}

probe_status probe_vocab(const http_target *t, const http_limits *lim, int *vocab, char *err, size_t err_len)
{
    int status = 0;
    probe_status ps = PROBE_OK;
    long ok = 0, bad = 1; /* id ok is accepted; id bad is the next to try, then refused */
    int a = accepts(t, lim, 0, &status, &ps, err, err_len);
    while (a == 1) {
        a = accepts(t, lim, bad, &status, &ps, err, err_len);
        if (a == 1) {
            ok = bad;
            bad *= 2;
            if (bad > (1L << 30)) {
                snprintf(err, err_len, "POST %s/detokenize accepts every token id up to 2^30", t->u->prefix);
                return PROBE_UNAVAILABLE;
            }
        }
    }
    while (a == 0 && bad - ok > 1) {
        long mid = ok + (bad - ok) / 2;
        int m = accepts(t, lim, mid, &status, &ps, err, err_len);
        if (m < 0) {
            a = -1;
            break;
        }
        if (m)
            ok = mid;
        else
            bad = mid;
    }
    if (a != 0) {
        if (ps == PROBE_OK)
            snprintf(err, err_len, "POST %s/detokenize answered %d, not 200 or 400", t->u->prefix, status);
        return ps == PROBE_OK ? PROBE_UNAVAILABLE : ps;
    }
    *vocab = (int)bad;
    return PROBE_OK;
}
