/* fuzz_loadtest_response.c — libFuzzer harness for how the load tester reads a server's answer (loadtest/http.c,
 * sse.c, request.c): the input, after a steering byte, is the bytes a server sends back — status line, headers, a body
 * by Content-Length, chunked or up to the close, SSE events, JSON — read from a socket through request_read exactly as
 * a request reads it. Byte 0 chooses the endpoint (bit 2: llama-server's /completion, else bit 0: /v1/completions or
 * /generate) and whether the request streamed (bit 1).
 *
 * Checks, whatever the bytes: the request ends ok or with one error kind; ok means a 200 with a usage
 * (prompt_tokens and completion_tokens >= 0) and, when streamed, as many token events as completion_tokens and one
 * inter-token gap fewer; a failure carries a message that is valid UTF-8, printable and at most 200 bytes; the finish
 * reason is valid UTF-8 (the report writes both into JSON). A failed check aborts (libFuzzer keeps the input). */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_files.h"
#include "request.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t max, const char *what)
{
    const size_t n = strlen(s);
    CHECK(n <= max, "%s: %zu bytes", what, n);
    CHECK(utf8_check(s, n) == n, "%s is not valid UTF-8", what);
    for (size_t i = 0; i < n; i++)
        CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f, "%s holds a control character", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const endpoint ep = data[0] & 4 ? ENDPOINT_LLAMA : data[0] & 1 ? ENDPOINT_COMPLETIONS : ENDPOINT_GENERATE;
    request_config c = {.ep = ep, .stream = data[0] & 2,
                        .max_tokens = 16, .timeout_s = 10, .stop_fd = -1};
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    const int buffer = 1 << 20; /* the whole input fits: no reader is needed while writing it */
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    CHECK(size - 1 == 0 || write(sv[1], data + 1, size - 1) == (ssize_t)(size - 1), "writing %zu bytes", size - 1);
    close(sv[1]);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    req_result r;
    request_read(&c, sv[0], &r);
    close(sv[0]);

    CHECK(r.error >= REQ_OK && r.error < REQ_CANCELLED, "error kind %d", r.error);
    CHECK(r.status == 0 || (r.status >= 100 && r.status <= 599), "status %d", r.status);
    check_text(r.finish, sizeof r.finish - 1, "finish_reason");
    if (r.error == REQ_OK) {
        CHECK(r.status == 200 && r.prompt_tokens >= 0 && r.output_tokens >= 0 && !r.message,
              "ok with status %d, usage %d + %d", r.status, r.prompt_tokens, r.output_tokens);
        if (c.stream)
            CHECK(r.token_events == r.output_tokens && r.n_itl == (r.token_events ? r.token_events - 1 : 0) &&
                      (r.token_events == 0 || r.ttft >= 0),
                  "ok stream: %d token events, %d gaps, usage %d", r.token_events, r.n_itl, r.output_tokens);
    } else {
        CHECK(r.message, "a failure without a message");
        check_text(r.message, 200, "message");
    }
    request_result_free(&r);
    return 0;
}
