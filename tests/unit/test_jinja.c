/* test_jinja.c — the chat-template interpreter (src/jinja_*.c) against jinja2: every case of
 * tests/fixtures/jinja/cases.json (rendered by jinja2 3.1.6 as transformers configures it; make_cases.py) gives
 * jinja2's text byte for byte, or fails where jinja2 raised (with its message where the message is Python's own);
 * constructs outside the subset fail with a message naming them and the line; every sandbox limit stops a runaway
 * template (or message) with its error, and the default limits do too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "jinja.h"
#include "test_util.h"

/* The variables of the fixture (a JSON object) as values, kept for the whole test. */
static jrt vars_rt;
static jv vars_dict;
static jinja_var vars[64];
static size_t n_vars;

static int setup(void **state)
{
    (void)state;
    cJSON *root = tu_read_json(tu_fixture("jinja/cases.json"));
    /* The variables as JSON text (floats like 3.0 stay floats). */
    const char *text = cJSON_GetObjectItem(root, "variables")->valuestring;
    jinja_limits limits = jinja_limits_default();
    jrt_init(&vars_rt, &limits, NULL);
    if (jv_from_json(&vars_rt, text, strlen(text), "variables", &vars_dict) || vars_dict.type != JV_DICT) {
        cJSON_Delete(root);
        return -1;
    }
    for (size_t i = 0; i < vars_dict.u.d->n && n_vars < 64; i++)
        vars[n_vars++] = (jinja_var){vars_dict.u.d->keys[i].u.s->data, vars_dict.u.d->vals[i]};
    cJSON_Delete(root);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    jv_unref(vars_dict);
    jrt_free(&vars_rt);
    return 0;
}

/* Parses and renders src with the fixture's variables and the clock at 2024-07-26 12:00:00 (local time). */
static fk_status render_with(const char *src, const jinja_limits *limits, char **out, size_t *len, fk_error *err)
{
    jinja_template *t = NULL;
    *out = NULL;
    fk_status st = jinja_parse(src, strlen(src), limits->max_depth, &t, err);
    if (st)
        return st;
    jrt rt;
    jrt_init(&rt, limits, err);
    struct tm tm = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12, .tm_isdst = -1};
    rt.fixed_now = true;
    rt.now = (int64_t)mktime(&tm);
    st = jinja_render(t, &rt, vars, n_vars, out, len);
    jrt_free(&rt);
    jinja_free(t);
    return st;
}

static fk_status render(const char *src, char **out, size_t *len, fk_error *err)
{
    jinja_limits limits = jinja_limits_default();
    return render_with(src, &limits, out, len, err);
}

/* Python exceptions whose message the interpreter reproduces word for word. */
static bool python_message(const char *error)
{
    static const char *const kinds[] = {"TemplateError: ", "TypeError: ", "UndefinedError: ", "ValueError: ",
                                        "ZeroDivisionError: ", "SecurityError: ", "OverflowError: ",
                                        "TemplateRuntimeError: "};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strncmp(error, kinds[i], strlen(kinds[i])))
            return true;
    return false;
}

static void test_matches_jinja2(void **state)
{
    (void)state;
    cJSON *root = tu_read_json(tu_fixture("jinja/cases.json"));
    int n = 0, bad = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next, n++) {
        const char *src = cJSON_GetObjectItem(c, "template")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "expected");
        const char *want_error = want ? NULL : cJSON_GetObjectItem(c, "error")->valuestring;
        char *out;
        size_t len;
        fk_error err = {0};
        fk_status st = render(src, &out, &len, &err);
        bool ok;
        if (want) {
            ok = st == FK_OK && len == strlen(want->valuestring) && memcmp(out, want->valuestring, len) == 0;
        } else if (!strncmp(want_error, "TemplateError: ", 15)) {
            ok = st == FK_ERR_INVALID_ARGUMENT && !strcmp(err.message, want_error);
        } else {
            /* Our message: "line N: <Python's message>" where jinja2's is Python's own. */
            const char *msg = strchr(want_error, ':') + 2;
            ok = st == FK_ERR_FORMAT && (!python_message(want_error) || strstr(err.message, msg));
        }
        if (!ok) {
            bad++;
            print_error("case %d: %s\n  want: %s\n  got (%d): %s\n", n, src, want ? want->valuestring : want_error,
                        st, st ? err.message : out);
        }
        free(out);
    }
    cJSON_Delete(root);
    if (bad)
        fail_msg("%d of %d cases differ from jinja2", bad, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_jinja2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
