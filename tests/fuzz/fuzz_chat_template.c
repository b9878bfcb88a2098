/* fuzz_chat_template.c — libFuzzer harness for the chat-template interpreter: an arbitrary template rendered with
 * arbitrary messages.
 *
 * Input: byte 0 steers the choices (add_generation_prompt, bos/eos given), then the template up to the first NUL
 * byte, then the messages (JSON text); without a NUL the messages are a fixed conversation. The template goes through
 * fk_chat_template_parse, then through the interpreter with small budgets (so that runaway templates end quickly)
 * and the variables fk_chat_template_render gives it. Checks:
 *   - parsing fails only with FK_ERR_FORMAT and a "line N: ..." message (or the UTF-8 one);
 *   - rendering fails only with FK_ERR_FORMAT ("line N: ..."), FK_ERR_INVALID_ARGUMENT (raise_exception's
 *     "TemplateError: ...", or messages that are not a JSON array of UTF-8) or FK_ERR_OUT_OF_MEMORY;
 *   - the rendered text is valid UTF-8 when the template and the messages are, and no longer than the budget;
 *   - a render that succeeds recorded no error on the way (no failure swallowed);
 *   - a second render gives the same status and text (no state leaks between renders).
 * A failed check aborts (libFuzzer reports the input); ASan, UBSan and LeakSanitizer watch everything else. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashkernel.h"
#include "fuzz_files.h"
#include "jinja.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char DEFAULT_MESSAGES[] =
    "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi {{ there }}\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>x</think>Hello\", \"tool_calls\": [{\"type\": \"function\","
    " \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [1.5, null, true]}}}]},"
    " {\"role\": \"tool\", \"content\": \"42\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"q\"}]}]";

typedef struct result {
    fk_status st;
    char *text;
    size_t len;
    fk_error err;
} result;

/* Renders as fk_chat_template_render does, with small budgets. */
static void render(const jinja_template *t, const char *messages, size_t messages_len, uint8_t ctl, result *r)
{
    jinja_limits limits = jinja_limits_default();
    limits.max_iterations = 20000;
    limits.max_steps = 200000;
    limits.max_output = 1 << 20;
    limits.max_alloc = 64 << 20;
    *r = (result){0};
    jrt rt;
    jrt_init(&rt, &limits, &r->err);
    rt.fixed_now = true;
    rt.now = 1721995200;
    jv msgs = jv_none(), bos = jv_none(), eos = jv_none();
    r->st = jv_from_json(&rt, messages, messages_len, "messages", &msgs);
    if (!r->st && (ctl & 2)) {
        r->st = jv_str(&rt, "<s>", 3, &bos);
        if (!r->st)
            r->st = jv_str(&rt, "</s>", 4, &eos);
    }
    if (!r->st) {
        jinja_var vars[6] = {{"messages", msgs}, {"tools", jv_none()}, {"documents", jv_none()},
                             {"add_generation_prompt", jv_bool(ctl & 1)}, {"bos_token", bos}, {"eos_token", eos}};
        r->st = jinja_render(t, &rt, vars, ctl & 2 ? 6 : 4, &r->text, &r->len);
    }
    jv_unref(msgs);
    jv_unref(bos);
    jv_unref(eos);
    jrt_free(&rt);
    if (r->st == FK_OK) {
        CHECK(r->len <= limits.max_output && r->text[r->len] == '\0', "output of %zu bytes", r->len);
        CHECK(r->err.status == FK_OK, "an error was swallowed: %s", r->err.message);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t ctl = data[0];
    const char *src = (const char *)data + 1;
    size_t src_len = size - 1;
    const char *nul = memchr(src, 0, src_len);
    const char *messages = nul ? nul + 1 : DEFAULT_MESSAGES;
    size_t messages_len = nul ? src_len - (size_t)(nul + 1 - src) : strlen(DEFAULT_MESSAGES);
    if (nul)
        src_len = (size_t)(nul - src);

    fk_chat_template *ct = NULL;
    fk_error err = {0};
    fk_status st = fk_chat_template_parse(src, src_len, &ct, &err);
    CHECK(st == FK_OK || st == FK_ERR_FORMAT, "parse status %d", st);
    CHECK(st == FK_OK || !strncmp(err.message, "line ", 5) || strstr(err.message, "not valid UTF-8"), "%s",
          err.message);
    fk_chat_template_free(ct);
    if (st)
        return 0;

    jinja_template *t;
    CHECK(jinja_parse(src, src_len, jinja_limits_default().max_depth, &t, &err) == FK_OK, "%s", err.message);
    result a, b;
    render(t, messages, messages_len, ctl, &a);
    render(t, messages, messages_len, ctl, &b);
    jinja_free(t);
    bool utf8 = utf8_check(src, src_len) == src_len && utf8_check(messages, messages_len) == messages_len;
    if (a.st == FK_OK) {
        CHECK(!utf8 || utf8_check(a.text, a.len) == a.len, "rendered text is not valid UTF-8");
    } else {
        CHECK(a.st == FK_ERR_FORMAT || a.st == FK_ERR_INVALID_ARGUMENT || a.st == FK_ERR_OUT_OF_MEMORY,
              "render status %d: %s", a.st, a.err.message);
        CHECK(a.st != FK_ERR_FORMAT || !strncmp(a.err.message, "line ", 5), "%s", a.err.message);
        CHECK(a.err.message[0], "an error without a message");
    }
    CHECK(a.st == b.st && a.len == b.len && (!a.len || !memcmp(a.text, b.text, a.len)) &&
              !strcmp(a.err.message, b.err.message),
          "two renders differ");
    free(a.text);
    free(b.text);
    return 0;
}
