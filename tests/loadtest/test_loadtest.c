/* test_loadtest.c — the load tester's parts without a server: the SSE parser against events it must give back
 * (fresh random events, line ends and splits each run), nearest-rank percentiles against their definition (count
 * of samples at or below), URL parsing, prompts (random and from a file), the level summary, the seeded
 * generator, and llama-server's real answers (tests/fixtures/llama-server) through the response reader. The seed is
 * printed; FK_TEST_SEED replays it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sys/socket.h>

#include "buf.h"
#include "prompts.h"
#include "request.h"
#include "rng.h"
#include "sse.h"
#include "stats.h"
#include "url.h"

static uint64_t seed(void)
{
    static uint64_t s;
    if (!s) {
        const char *env = getenv("FK_TEST_SEED");
        s = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        fprintf(stderr, "random seed: FK_TEST_SEED=%llu\n", (unsigned long long)s);
    }
    return s;
}

/* ---- SSE ---- */

typedef struct events {
    char **data;
    size_t n;
} events;

static bool collect_event(void *user, const char *data, size_t n, double t)
{
    (void)t;
    events *e = user;
    assert_int_equal(strlen(data), n); /* NUL-terminated at n */
    e->data = realloc(e->data, (e->n + 1) * sizeof *e->data);
    assert_non_null(e->data);
    e->data[e->n] = strndup(data, n);
    e->n++;
    return true;
}

static void events_free(events *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->data[i]);
    free(e->data);
}

/* Random events (some with several lines, some empty, with ':' and spaces inside) written with random line ends,
 * comments and ignored fields, fed in random pieces: the parser gives exactly the events back. */
static void test_sse_random_splits(void **state)
{
    (void)state;
    rng r;
    for (int round = 0; round < 300; round++) {
        rng_init(&r, seed(), 1, (uint64_t)round);
        int n_events = 1 + (int)rng_below(&r, 12);
        char **want = calloc((size_t)n_events, sizeof *want);
        buf wire = {0};
        const char *ends[] = {"\n", "\r\n", "\r"};
        int last_end = 0;
        for (int e = 0; e < n_events; e++) {
            buf d = {0};
            int lines = 1 + (int)rng_below(&r, 3);
            for (int l = 0; l < lines; l++) {
                buf line = {0};
                int len = (int)rng_below(&r, 40);
                for (int i = 0; i < len; i++) {
                    char c = " :ab{}\"x0[]"[rng_below(&r, 11)];
                    assert_true(buf_append(&line, &c, 1));
                }
                if (rng_below(&r, 4) == 0) /* a comment line, or an ignored field */
                    assert_true(buf_printf(&wire, rng_below(&r, 2) ? ": ping%s" : "event: x%s", ends[last_end]));
                bool space = line.len && line.s[0] == ' ' ? true : rng_below(&r, 2);
                assert_true(buf_printf(&wire, "data:%s%s", space ? " " : "", line.len ? line.s : ""));
                int end = (int)rng_below(&r, 3);
                if (last_end == 2 && end == 0)
                    end = 2; /* CR then LF would read as one CRLF */
                assert_true(buf_printf(&wire, "%s", ends[end]));
                last_end = end;
                assert_true(buf_printf(&d, "%s%s", l ? "\n" : "", line.len ? line.s : ""));
                buf_free(&line);
            }
            int end = (int)rng_below(&r, 3);
            if (last_end == 2 && end == 0)
                end = 2;
            assert_true(buf_printf(&wire, "%s", ends[end])); /* the blank line */
            last_end = end;
            want[e] = d.s ? d.s : strdup("");
        }
        sse p;
        sse_init(&p, 1 << 20);
        events got = {0};
        size_t i = 0;
        while (i < wire.len) {
            size_t n = 1 + (size_t)rng_below(&r, 16);
            if (n > wire.len - i)
                n = wire.len - i;
            assert_int_equal(sse_feed(&p, wire.s + i, n, 0, collect_event, &got), 0);
            i += n;
        }
        assert_int_equal(got.n, (size_t)n_events);
        for (int e = 0; e < n_events; e++) {
            assert_string_equal(got.data[e], want[e]);
            free(want[e]);
        }
        free(want);
        events_free(&got);
        sse_free(&p);
        buf_free(&wire);
    }
}

static void test_sse_limits(void **state)
{
    (void)state;
    sse p;
    sse_init(&p, 64);
    events got = {0};
    /* an event without its blank line is not dispatched */
    assert_int_equal(sse_feed(&p, "data: a\n", 8, 0, collect_event, &got), 0);
    assert_int_equal(got.n, 0);
    assert_int_equal(sse_feed(&p, "\n", 1, 0, collect_event, &got), 0);
    assert_int_equal(got.n, 1);
    /* "data" without a colon is an empty data line; a blank line with no data dispatches nothing */
    assert_int_equal(sse_feed(&p, "data\n\n\n\n", 8, 0, collect_event, &got), 0);
    assert_int_equal(got.n, 2);
    assert_string_equal(got.data[1], "");
    /* an event over the limit is refused */
    char big[100];
    memset(big, 'x', sizeof big);
    assert_int_equal(sse_feed(&p, "data: ", 6, 0, collect_event, &got), 0);
    assert_int_equal(sse_feed(&p, big, sizeof big, 0, collect_event, &got), -1);
    events_free(&got);
    sse_free(&p);
}

/* ---- percentiles ---- */

/* The definition, by counting: v is the p-th percentile of x[n] if v is a sample, at least p% of the samples
 * are <= v, and fewer than p% are < v. */
static void check_percentile(const double *x, size_t n, int p, double v)
{
    size_t le = 0, lt = 0;
    bool member = false;
    for (size_t i = 0; i < n; i++) {
        le += x[i] <= v;
        lt += x[i] < v;
        member = member || x[i] == v;
    }
    assert_true(member);
    assert_true(100 * le >= (size_t)p * n);
    assert_true(100 * lt < (size_t)p * n);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_percentiles(void **state)
{
    (void)state;
    rng r;
    rng_init(&r, seed(), 2, 0);
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + (size_t)rng_below(&r, round < 1000 ? 10 : 1000);
        double *x = malloc(n * sizeof *x);
        for (size_t i = 0; i < n; i++) /* few distinct values: ties are the interesting case */
            x[i] = (double)rng_below(&r, 1 + n / 2);
        qsort(x, n, sizeof *x, cmp);
        int ps[] = {1, 50, 90, 99, 100, (int)(1 + rng_below(&r, 100))};
        for (int k = 0; k < 6; k++)
            check_percentile(x, n, ps[k], stats_percentile(x, n, ps[k]));
        free(x);
    }
    /* the textbook cases: p50 of 1..10 is 5, p90 is 9, p99 is 10; p50 of one sample is itself */
    double ten[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    assert_true(stats_percentile(ten, 10, 50) == 5);
    assert_true(stats_percentile(ten, 10, 90) == 9);
    assert_true(stats_percentile(ten, 10, 99) == 10);
    assert_true(stats_percentile(ten, 1, 50) == 1);
}

/* ---- level summary ---- */

static void test_summary(void **state)
{
    (void)state;
    /* three successes, two 429s, one timeout, one interrupted (not counted as a request) */
    double itl_a[] = {0.010, 0.020}, itl_b[] = {0.030};
    req_result r[7] = {
        {.start = 0.0, .e2e = 1.0, .ttft = 0.1, .prompt_tokens = 10, .output_tokens = 3, .itl = itl_a, .n_itl = 2},
        {.start = 0.5, .e2e = 1.5, .ttft = 0.2, .prompt_tokens = 10, .output_tokens = 2, .itl = itl_b, .n_itl = 1},
        {.start = 1.0, .e2e = 1.0, .ttft = 0.3, .prompt_tokens = 10, .output_tokens = 1},
        {.start = 1.2, .e2e = 0.1, .error = REQ_HTTP_STATUS, .status = 429, .message = "overloaded"},
        {.start = 1.3, .e2e = 0.1, .error = REQ_HTTP_STATUS, .status = 429, .message = "overloaded"},
        {.start = 1.4, .e2e = 2.6, .error = REQ_TIMEOUT, .message = "timed out"},
        {.start = 1.5, .e2e = 9.0, .error = REQ_INTERRUPTED},
    };
    level_summary s;
    assert_int_equal(stats_summarize(r, 7, 4, 0, true, &s), 0);
    assert_int_equal(s.requests, 6);
    assert_int_equal(s.ok, 3);
    assert_int_equal(s.failed, 3);
    assert_int_equal(s.interrupted, 1);
    assert_true(s.duration_s == 4.0); /* first start 0, last end 1.4 + 2.6 (the interrupted one is left out) */
    assert_int_equal(s.output_tokens, 6);
    assert_int_equal(s.prompt_tokens, 30);
    assert_true(s.output_tok_per_s == 6 / 4.0 && s.total_tok_per_s == 36 / 4.0 && s.req_per_s == 3 / 4.0);
    assert_int_equal(s.n_kinds, 2);
    assert_string_equal(s.kinds[0].name, "http_429");
    assert_int_equal(s.kinds[0].count, 2);
    assert_string_equal(s.kinds[0].example, "overloaded");
    assert_string_equal(s.kinds[1].name, "timeout");
    assert_int_equal(s.ttft.n, 3);
    assert_true(s.ttft.p50 > 199.999 && s.ttft.p50 < 200.001);
    assert_int_equal(s.itl.n, 3);
    assert_true(s.itl.p99 > 29.999 && s.itl.p99 < 30.001);
    assert_int_equal(s.e2e.n, 3);
    assert_true(s.e2e.max > 1499.999 && s.e2e.max < 1500.001);
    stats_free(&s);
}

/* ---- URLs ---- */

static void test_url(void **state)
{
    (void)state;
    struct {
        const char *in, *host, *port, *authority, *prefix;
    } good[] = {
        {"http://127.0.0.1:8080", "127.0.0.1", "8080", "127.0.0.1:8080", ""},
        {"http://localhost", "localhost", "80", "localhost", ""},
        {"http://h:1/", "h", "1", "h:1", ""},
        {"http://h:65535/api/v2//", "h", "65535", "h:65535", "/api/v2"},
        {"http://[::1]:9000/x", "::1", "9000", "[::1]:9000", "/x"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        url u;
        char err[256];
        assert_int_equal(url_parse(good[i].in, &u, err, sizeof err), 0);
        assert_string_equal(u.host, good[i].host);
        assert_string_equal(u.port, good[i].port);
        assert_string_equal(u.authority, good[i].authority);
        assert_string_equal(u.prefix, good[i].prefix);
        url_free(&u);
    }
    struct {
        const char *in, *why;
    } bad[] = {
        {"127.0.0.1:8080", "must start with http://"}, {"https://h", "https is not supported"},
        {"http://", "no host"}, {"http://:80", "no host"}, {"http://h:0", "port"}, {"http://h:65536", "port"},
        {"http://h:8x", "port"}, {"http://h:", "port"}, {"http://h:123456", "port"},
        {"http://h/a?b=1", "no query"}, {"http://h#f", "no query"}, {"http://u@h", "user info"},
        {"http://[::1", "unclosed"}, {"http://[::1]x", "junk"}, {"http://h/a b", "space"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        url u;
        char err[256];
        assert_int_equal(url_parse(bad[i].in, &u, err, sizeof err), -1);
        if (!strstr(err, bad[i].why))
            fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].in, err, bad[i].why);
    }
}

/* ---- prompts ---- */

static char *render(const prompts *p, unsigned level, unsigned long long i)
{
    buf b = {0};
    assert_true(prompts_render(p, level, i, &b));
    return b.s;
}

static void test_prompts_random(void **state)
{
    (void)state;
    prompts p;
    int vocab = 1 + (int)(seed() % 50000);
    prompts_random(&p, 257, vocab, seed());
    char *a = render(&p, 0, 5), *b = render(&p, 0, 5), *c = render(&p, 1, 5), *d = render(&p, 0, 6);
    assert_string_equal(a, b); /* (seed, level, i) decides the prompt */
    if (vocab > 1) {
        assert_string_not_equal(a, c); /* another level, another prompt */
        assert_string_not_equal(a, d);
    }
    cJSON *ids = cJSON_Parse(a);
    assert_true(cJSON_IsArray(ids));
    assert_int_equal(cJSON_GetArraySize(ids), 257);
    for (const cJSON *id = ids->child; id; id = id->next)
        assert_true(cJSON_IsNumber(id) && id->valueint >= 0 && id->valueint < vocab);
    cJSON_Delete(ids);
    free(a);
    free(b);
    free(c);
    free(d);
}

static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/fk-loadtest-prompts-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_prompts_file(void **state)
{
    (void)state;
    char *path = write_temp("ROMEO: \"hi\"\r\n\n   \n\"a\\nb\"\n[0, 826, 270]\n  [5]\nlast line without LF");
    prompts p;
    char err[256];
    assert_int_equal(prompts_load(&p, path, err, sizeof err), 0);
    assert_int_equal(p.n, 5);
    const char *want[] = {"\"ROMEO: \\\"hi\\\"\"", "\"a\\nb\"", "[0,826,270]", "[5]", "\"last line without LF\""};
    for (int i = 0; i < 5; i++) {
        char *s = render(&p, 3, (unsigned long long)i + 5); /* line (i + 5) mod 5: in order, repeated */
        assert_string_equal(s, want[i]);
        free(s);
    }
    prompts_free(&p);
    unlink(path);
    free(path);

    const char *bad[][2] = {
        {"ok\n[1, -2]\n", "line 2"}, {"[1.5]\n", "line 1"}, {"\"unterminated\n", "line 1"}, {"[]\n", "line 1"},
        {"\n\n", "no prompts"}, {"a\n{\"x\":1}\n[\"a\"]\n", "line 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path = write_temp(bad[i][0]);
        assert_int_equal(prompts_load(&p, path, err, sizeof err), -1);
        if (!strstr(err, bad[i][1]))
            fail_msg("prompts \"%s\": message \"%s\" lacks \"%s\"", bad[i][0], err, bad[i][1]);
        unlink(path);
        free(path);
    }
    assert_int_equal(prompts_load(&p, "/nonexistent/prompts.txt", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/prompts.txt"));
}

/* ---- the generator ---- */

static void test_rng(void **state)
{
    (void)state;
    rng r;
    rng_init(&r, seed(), 3, 0);
    const int n = 200000;
    double sum = 0;
    int hist[7] = {0};
    for (int i = 0; i < n; i++) {
        sum += rng_exponential(&r, 4.0);
        uint64_t k = rng_below(&r, 7);
        assert_true(k < 7);
        hist[k]++;
    }
    /* the mean of n exponentials of rate 4 is 0.25 with a standard deviation of 0.25 / sqrt(n) = 0.00056 */
    assert_true(sum / n > 0.25 - 0.003 && sum / n < 0.25 + 0.003);
    for (int k = 0; k < 7; k++) /* each bucket within 5 standard deviations (sqrt(n / 7 * 6 / 7) = 156) of n / 7 */
        assert_true(hist[k] > n / 7 - 5 * 156 && hist[k] < n / 7 + 5 * 156);
}

/* ---- llama-server's answers ---- */

/* The bytes of tests/fixtures/llama-server/<name>, read back by request_read as the load tester reads a response
 * from a socket (written in pieces of random sizes), as a request to endpoint ep. */
static void read_capture(const char *name, endpoint ep, bool stream, req_result *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s/llama-server/%s", FK_FIXTURES_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        assert_true(buf_append(&b, chunk, n));
    fclose(f);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    const int size = 1 << 20; /* the whole capture fits: no reader is needed while writing it */
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    rng g;
    rng_init(&g, seed(), 7, stream);
    for (size_t at = 0; at < b.len;) {
        size_t piece = 1 + (size_t)rng_below(&g, 200);
        if (piece > b.len - at)
            piece = b.len - at;
        assert_int_equal(write(sv[1], b.s + at, piece), (ssize_t)piece);
        at += piece;
    }
    close(sv[1]);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    request_config c = {.ep = ep, .stream = stream, .max_tokens = 6, .timeout_s = 10, .stop_fd = -1};
    request_read(&c, sv[0], r);
    close(sv[0]);
    buf_free(&b);
}

/* The counts the fixtures' README gives for the captures: 6 tokens after a 5-token prompt, stopped by the limit. */
static void test_llama_server_answers(void **state)
{
    (void)state;
    req_result r;
    read_capture("stream.http", ENDPOINT_LLAMA, true, &r);
    assert_int_equal(r.error, REQ_OK);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.token_events, 6);
    assert_int_equal(r.output_tokens, 6);
    assert_int_equal(r.prompt_tokens, 5);
    assert_int_equal(r.n_itl, 5);
    assert_true(r.ttft >= 0);
    assert_string_equal(r.finish, "length");
    request_result_free(&r);

    read_capture("whole.http", ENDPOINT_LLAMA, false, &r);
    assert_int_equal(r.error, REQ_OK);
    assert_int_equal(r.output_tokens, 6);
    assert_int_equal(r.prompt_tokens, 5);
    assert_int_equal(r.token_events, 0);
    assert_string_equal(r.finish, "length");
    request_result_free(&r);

    /* the same stream read as an OpenAI one is refused (it never ends with [DONE]), not counted as a success */
    read_capture("stream.http", ENDPOINT_COMPLETIONS, true, &r);
    assert_int_equal(r.error, REQ_BAD_RESPONSE);
    assert_non_null(r.message);
    request_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_random_splits), cmocka_unit_test(test_sse_limits),
        cmocka_unit_test(test_percentiles),       cmocka_unit_test(test_summary),
        cmocka_unit_test(test_url),               cmocka_unit_test(test_prompts_random),
        cmocka_unit_test(test_prompts_file),      cmocka_unit_test(test_rng),
        cmocka_unit_test(test_llama_server_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
