/* test_chat_template.c — the chat-template API and `flashkernel chat-template` against Hugging Face transformers:
 * every case of tests/fixtures/chat-templates/cases.json (real models' templates) renders to `expected` byte for byte
 * or fails with exactly `error`, through fk_chat_template_render and through the binary, with the clock fixed at
 * 2024-07-26 12:00; the chat_cases of tests/fixtures/jinja (reasoning aliasing, numbers, content parts) likewise;
 * fk_chat_template_find on every form of tokenizer_config.json; bad messages; one template rendered by many
 * threads at once; the command's usage, @FILE and errors. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "flashkernel.h"
#include "test_util.h"

static char *tmp_dir;

static int setup(void **state)
{
    (void)state;
    tmp_dir = tu_make_temp_dir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_remove_dir(tmp_dir);
    free(tmp_dir);
    return 0;
}

/* 2024-07-26 12:00:00 local time, the fixtures' clock (strftime_now formats local time, as Python's datetime.now). */
static int64_t fixture_now(void)
{
    struct tm tm = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12, .tm_isdst = -1};
    return (int64_t)mktime(&tm);
}

static const char *string_field(const cJSON *c, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(c, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Renders through the API; returns the status, the text or the error message in *out (malloc'd). */
static fk_status api_render(const char *source, const char *messages, bool agp, const char *bos, const char *eos,
                            char **out)
{
    fk_chat_template *t;
    fk_error err = {0};
    fk_status st = fk_chat_template_parse(source, strlen(source), &t, &err);
    if (!st) {
        fk_chat_render_params p = {.messages_json = messages,
                                   .messages_len = strlen(messages),
                                   .add_generation_prompt = agp,
                                   .bos_token = bos,
                                   .eos_token = eos,
                                   .fixed_now = true,
                                   .now = fixture_now()};
        char *text;
        size_t len;
        st = fk_chat_template_render(t, &p, &text, &len, &err);
        if (!st) {
            assert_int_equal(strlen(text), len);
            *out = text;
        }
        fk_chat_template_free(t);
    }
    if (st)
        *out = strdup(err.message);
    return st;
}

/* Checks one case: expected text, or the error message (a raise_exception: FK_ERR_INVALID_ARGUMENT). */
static bool check_case(const char *what, fk_status st, const char *got, const cJSON *c)
{
    const char *want = string_field(c, "expected"), *want_error = string_field(c, "error");
    bool ok = want ? st == FK_OK && !strcmp(got, want)
                   : st == FK_ERR_INVALID_ARGUMENT && !strcmp(got, want_error);
    if (!ok)
        print_error("%s: status %d\n  got:  %s\n  want: %s\n", what, st, got, want ? want : want_error);
    return ok;
}

static void test_fixture_cases_through_the_api(void **state)
{
    (void)state;
    cJSON *root = tu_read_json(tu_fixture("chat-templates/cases.json"));
    int n = 0, bad = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next, n++) {
        char path[512], what[600];
        snprintf(path, sizeof path, "chat-templates/%s", string_field(c, "template"));
        char *source = tu_read_file(tu_fixture(path), NULL);
        char *messages = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "messages"));
        char *got;
        fk_status st = api_render(source, messages, cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")),
                                  string_field(c, "bos_token"), string_field(c, "eos_token"), &got);
        snprintf(what, sizeof what, "%s (%s)", string_field(c, "template"), string_field(c, "title"));
        bad += !check_case(what, st, got, c);
        free(got);
        free(messages);
        free(source);
    }
    cJSON_Delete(root);
    assert_int_equal(n, 77);
    if (bad)
        fail_msg("%d of %d fixture cases differ from transformers", bad, n);
}

static void test_chat_cases(void **state)
{
    (void)state;
    cJSON *root = tu_read_json(tu_fixture("jinja/cases.json"));
    int n = 0, bad = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "chat_cases")->child; c; c = c->next, n++) {
        char *got;
        /* The messages as Python's json.dumps wrote them: 1.0 stays a float, 1 an int. */
        fk_status st = api_render(string_field(c, "template"), string_field(c, "messages"),
                                  cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")),
                                  string_field(c, "bos_token"), string_field(c, "eos_token"), &got);
        bad += !check_case(string_field(c, "template"), st, got, c);
        free(got);
    }
    cJSON_Delete(root);
    assert_true(n >= 7);
    if (bad)
        fail_msg("%d of %d chat cases differ from transformers", bad, n);
}

static void expect_render_error(const char *messages, fk_status want, const char *needle)
{
    char *got;
    fk_status st = api_render("{{ messages }}", messages, false, NULL, NULL, &got);
    if (st != want || !strstr(got, needle))
        fail_msg("messages %s: status %d, \"%s\"; want %d with \"%s\"", messages, st, got, want, needle);
    free(got);
}

static void test_bad_messages(void **state)
{
    (void)state;
    expect_render_error("{\"role\": \"user\"}", FK_ERR_INVALID_ARGUMENT, "messages must be a JSON array");
    expect_render_error("\"hi\"", FK_ERR_INVALID_ARGUMENT, "messages must be a JSON array");
    expect_render_error("[1]", FK_ERR_INVALID_ARGUMENT, "messages[0] must be an object");
    expect_render_error("[{\"role\": \"user\"}, []]", FK_ERR_INVALID_ARGUMENT, "messages[1] must be an object");
    expect_render_error("[{\"role\": \"user\"", FK_ERR_INVALID_ARGUMENT, "messages: invalid JSON");
    expect_render_error("[] x", FK_ERR_INVALID_ARGUMENT, "trailing data");
    expect_render_error("[{\"a\": 1, \"a\": 2}]", FK_ERR_INVALID_ARGUMENT, "duplicate key \"a\"");
    expect_render_error("[{\"content\": \"a\xff\"}]", FK_ERR_INVALID_ARGUMENT, "messages is not valid UTF-8 at byte 15");
    expect_render_error("[{\"content\": \"a\\u0000b\"}]", FK_ERR_INVALID_ARGUMENT, "NUL character not allowed");
    expect_render_error("[{\"n\": 99999999999999999999}]", FK_ERR_INVALID_ARGUMENT,
                        "integer 99999999999999999999 is out of range");
    /* An empty conversation is the template's business: this one indexes messages[0] (jinja2's UndefinedError). */
    char *got;
    assert_int_equal(api_render("{{ messages[0].role }}", "[]", false, NULL, NULL, &got), FK_ERR_FORMAT);
    assert_string_equal(got, "line 1: list object has no element 0");
    free(got);
    assert_int_equal(api_render("{% if %}", "[]", false, NULL, NULL, &got), FK_ERR_FORMAT);
    assert_non_null(strstr(got, "line 1:"));
    free(got);
    fk_chat_template *t;
    fk_error err = {0};
    assert_int_equal(fk_chat_template_parse("{{ 'a\xc3' }}", 9, &t, &err), FK_ERR_FORMAT);
    assert_string_equal(err.message, "the template is not valid UTF-8 at byte 5");
    assert_int_equal(fk_chat_template_parse("{{ 1 }}", 7, &t, &err), FK_OK);
    char *text;
    size_t len;
    fk_chat_render_params p = {.messages_json = "[]", .messages_len = 2, .bos_token = "\xff"};
    assert_int_equal(fk_chat_template_render(t, &p, &text, &len, &err), FK_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "bos_token is not valid UTF-8 at byte 0");
    assert_int_equal(fk_chat_template_render(t, NULL, &text, &len, &err), FK_ERR_INVALID_ARGUMENT);
    fk_chat_template_free(t);
    fk_chat_template_free(NULL);
}

/* Writes a model directory holding tokenizer_config.json = config (NULL: none) and chat_template.jinja = file
 * (NULL: none); returns its path (static). */
static const char *model_dir(const char *name, const char *config, const char *file)
{
    static char dir[4096];
    char path[4200];
    snprintf(dir, sizeof dir, "%s/%s", tmp_dir, name);
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    assert_int_equal(system(path), 0);
    if (config) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        tu_write_file(path, config, strlen(config));
    }
    if (file) {
        snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
        tu_write_file(path, file, strlen(file));
    }
    return dir;
}

static fk_status find(const char *dir, char **source, char **bos, char **eos, fk_error *err)
{
    *source = *bos = *eos = NULL;
    return fk_chat_template_find(dir, source, bos, eos, err);
}

static void test_find(void **state)
{
    (void)state;
    char *src, *bos, *eos;
    fk_error err = {0};
    const char *dir = model_dir("plain", "{\"chat_template\": \"{{ bos_token }}x\", \"bos_token\": \"<s>\", "
                                         "\"eos_token\": {\"content\": \"</s>\", \"lstrip\": false}}", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_OK);
    assert_string_equal(src, "{{ bos_token }}x");
    assert_string_equal(bos, "<s>");
    assert_string_equal(eos, "</s>");
    fk_free(src), fk_free(bos), fk_free(eos);

    dir = model_dir("named", "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, "
                             "{\"name\": \"default\", \"template\": \"D\"}], \"bos_token\": null}", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_OK);
    assert_string_equal(src, "D");
    assert_null(bos);
    assert_null(eos);
    fk_free(src);

    /* chat_template.jinja takes priority, as transformers gives it (tokens still from the config). */
    dir = model_dir("file", "{\"chat_template\": \"old\", \"eos_token\": \"<|im_end|>\"}", "new\r\n");
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_OK);
    assert_string_equal(src, "new\r\n");
    assert_string_equal(eos, "<|im_end|>");
    fk_free(src), fk_free(eos);
    dir = model_dir("file-only", NULL, "only");
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_OK);
    assert_string_equal(src, "only");
    assert_null(eos);
    fk_free(src);

    dir = model_dir("no-default", "{\"chat_template\": [{\"name\": \"rag\", \"template\": \"R\"}]}", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "no chat template is named \"default\" (there are \"rag\")"));
    dir = model_dir("none", "{\"bos_token\": \"<s>\"}", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "tokenizer_config.json has no chat_template"));
    assert_null(src);
    assert_null(bos);
    dir = model_dir("bad-type", "{\"chat_template\": 5}", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_ERR_FORMAT);
    dir = model_dir("bad-token", "{\"chat_template\": \"x\", \"eos_token\": 7}", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_ERR_FORMAT);
    assert_non_null(strstr(err.message, "\"eos_token\" must be a string"));
    assert_null(src);
    dir = model_dir("bad-json", "{\"chat_template\": ", NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_ERR_FORMAT);
    dir = model_dir("empty", NULL, NULL);
    assert_int_equal(find(dir, &src, &bos, &eos, &err), FK_ERR_IO);
    assert_non_null(strstr(err.message, "tokenizer_config.json: cannot open"));
}

/* ---- concurrency ---- */

typedef struct worker {
    const fk_chat_template *t;
    const char *messages, *want;
    int failures;
} worker;

static void *render_many(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 40; i++) {
        fk_chat_render_params p = {.messages_json = w->messages,
                                   .messages_len = strlen(w->messages),
                                   .add_generation_prompt = true,
                                   .bos_token = "<|begin_of_text|>",
                                   .fixed_now = true,
                                   .now = fixture_now()};
        char *text = NULL;
        size_t len;
        fk_error err = {0};
        w->failures += fk_chat_template_render(w->t, &p, &text, &len, &err) != FK_OK || strcmp(text, w->want);
        fk_free(text);
    }
    return NULL;
}

static void test_concurrent_renders(void **state)
{
    (void)state;
    char *source = tu_read_file(tu_fixture("chat-templates/templates/meta-llama-Llama-3.2-3B-Instruct.jinja"), NULL);
    const char *messages = "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}]";
    char *want;
    assert_int_equal(api_render(source, messages, true, "<|begin_of_text|>", NULL, &want), FK_OK);
    fk_chat_template *t;
    assert_int_equal(fk_chat_template_parse(source, strlen(source), &t, NULL), FK_OK);
    worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.t = t, .messages = messages, .want = want};
        assert_int_equal(pthread_create(&th[i], NULL, render_many, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    fk_chat_template_free(t);
    free(want);
    free(source);
}

/* ---- the command ---- */

/* Runs `flashkernel ARGS`; returns its exit status, stdout in *out and stderr in *errtext (malloc'd). */
static int run(const char *args, char **out, char **errtext)
{
    char cmd[65536], err_path[4096];
    snprintf(err_path, sizeof err_path, "%s/stderr", tmp_dir);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", FK_BINARY, args, err_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 2)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int status = pclose(p);
    *out = buf;
    *errtext = tu_read_file(err_path, NULL);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* s quoted for sh. */
static const char *sh_quote(const char *s, char *buf, size_t size)
{
    size_t k = 0;
    buf[k++] = '\'';
    for (; *s && k + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(buf + k, "'\\''", 4);
            k += 4;
        } else {
            buf[k++] = *s;
        }
    }
    buf[k++] = '\'';
    buf[k] = '\0';
    return buf;
}

static void test_fixture_cases_through_the_command(void **state)
{
    (void)state;
    cJSON *root = tu_read_json(tu_fixture("chat-templates/cases.json"));
    int n = 0, bad = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next, n++) {
        char path[512], args[32768], q[3][8192];
        snprintf(path, sizeof path, "chat-templates/%s", string_field(c, "template"));
        char *messages = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "messages"));
        int k = snprintf(args, sizeof args, "chat-template --template '%s' --messages %s --now 2024-07-26T12:00:00%s",
                         tu_fixture(path), sh_quote(messages, q[0], sizeof q[0]),
                         cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")) ? " --add-generation-prompt" : "");
        if (string_field(c, "bos_token"))
            k += snprintf(args + k, sizeof args - k, " --bos-token %s", sh_quote(string_field(c, "bos_token"), q[1], sizeof q[1]));
        if (string_field(c, "eos_token"))
            snprintf(args + k, sizeof args - k, " --eos-token %s", sh_quote(string_field(c, "eos_token"), q[2], sizeof q[2]));
        char *out, *errtext;
        int rc = run(args, &out, &errtext);
        const char *want = string_field(c, "expected");
        bool ok;
        if (want) {
            ok = rc == 0 && !strcmp(out, want);
        } else {
            char line[1024];
            snprintf(line, sizeof line, "error: %s\n", string_field(c, "error"));
            ok = rc == 1 && !strcmp(errtext, line) && !out[0];
        }
        if (!ok) {
            bad++;
            print_error("%s (%s): exit %d\n  stdout: %s\n  stderr: %s\n", string_field(c, "template"),
                        string_field(c, "title"), rc, out, errtext);
        }
        free(out);
        free(errtext);
        free(messages);
    }
    cJSON_Delete(root);
    assert_int_equal(n, 77);
    if (bad)
        fail_msg("%d of %d fixture cases differ through flashkernel chat-template", bad, n);
}

static void expect_run(const char *args, int code, const char *out_equals, const char *err_needle)
{
    char *out, *e;
    int rc = run(args, &out, &e);
    if (rc != code || (out_equals && strcmp(out, out_equals)) || (err_needle && !strstr(e, err_needle)))
        fail_msg("flashkernel %s: exit %d (want %d)\n  stdout: %s\n  stderr: %s", args, rc, code, out, e);
    free(out);
    free(e);
}

static void test_command_usage_and_errors(void **state)
{
    (void)state;
    char args[16384], path[4200];
    expect_run("chat-template --help", 0, NULL, NULL);
    char *out, *e;
    assert_int_equal(run("chat-template --help", &out, &e), 0);
    assert_non_null(strstr(out, "--messages JSON"));
    assert_non_null(strstr(out, "@FILE"));
    free(out), free(e);
    assert_int_equal(run("--help", &out, &e), 0);
    assert_non_null(strstr(out, "chat-template"));
    free(out), free(e);
    expect_run("chat-template", 2, "", "--messages is required");
    expect_run("chat-template --messages '[]' --bogus", 2, "", "usage");
    expect_run("chat-template --messages '[]' stray", 2, "", "unexpected argument \"stray\"");
    expect_run("chat-template --messages '[]' --model m --template t", 2, "", "give --model or --template, not both");
    expect_run("chat-template --messages '[]' --now yesterday", 2, "", "--now must be a time like");

    /* A template file, messages from a file, the clock, no newline added. */
    snprintf(path, sizeof path, "%s/t.jinja", tmp_dir);
    const char *tmpl = "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{{ strftime_now('%d %b %Y') }}";
    tu_write_file(path, tmpl, strlen(tmpl));
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s/m.json", tmp_dir);
    const char *msgs = "[{\"role\": \"user\", \"content\": \"caf\xc3\xa9 {{ 1 }}\"}]\n";
    tu_write_file(mpath, msgs, strlen(msgs));
    snprintf(args, sizeof args, "chat-template --template '%s' --messages @'%s' --now 2024-07-26T12:00:00", path, mpath);
    expect_run(args, 0, "[user:caf\xc3\xa9 {{ 1 }}]26 Jul 2024", NULL);
    snprintf(args, sizeof args, "chat-template --template '%s' --messages @/nonexistent.json", path);
    expect_run(args, 1, "", "cannot open /nonexistent.json");
    snprintf(args, sizeof args, "chat-template --template '%s' --messages '[1'", path);
    expect_run(args, 1, "", "error: messages: invalid JSON at byte 2: unexpected end of input");
    expect_run("chat-template --template /nonexistent.jinja --messages '[]'", 1, "", "cannot open /nonexistent.jinja");

    /* A model directory: its template and tokens; flags override the tokens. */
    const char *dir = model_dir("cli", "{\"chat_template\": \"{{ bos_token }}{{ messages[0].content }}{{ eos_token }}\", "
                                       "\"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}", NULL);
    snprintf(args, sizeof args, "chat-template --model '%s' --messages '[{\"content\": \"x\"}]'", dir);
    expect_run(args, 0, "<s>x</s>", NULL);
    snprintf(args, sizeof args, "chat-template --model '%s' --messages '[{\"content\": \"x\"}]' --eos-token E", dir);
    expect_run(args, 0, "<s>xE", NULL);
    dir = model_dir("cli-none", "{}", NULL);
    snprintf(args, sizeof args, "chat-template --model '%s' --messages '[]'", dir);
    expect_run(args, 1, "", "has no chat_template");

    /* Template errors: parse (naming the line and construct) and render. */
    snprintf(path, sizeof path, "%s/bad.jinja", tmp_dir);
    tu_write_file(path, "a\n{{ x | wordwrap }}", 20);
    snprintf(args, sizeof args, "chat-template --template '%s' --messages '[]'", path);
    expect_run(args, 1, "", "error: line 2: filter 'wordwrap' is not supported\n");
    tu_write_file(path, "{{ raise_exception('nope') }}", 29);
    expect_run(args, 1, "", "error: TemplateError: nope\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_cases_through_the_api),
        cmocka_unit_test(test_chat_cases),
        cmocka_unit_test(test_bad_messages),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_concurrent_renders),
        cmocka_unit_test(test_fixture_cases_through_the_command),
        cmocka_unit_test(test_command_usage_and_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
