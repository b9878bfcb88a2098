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

/* Renders src with limits; asserts it fails with status `want` and a message holding `needle`. */
static void expect_fail_with(const char *src, const jinja_limits *limits, fk_status want, const char *needle)
{
    char *out;
    size_t len;
    fk_error err = {0};
    fk_status st = render_with(src, limits, &out, &len, &err);
    if (st != want || (st && !strstr(err.message, needle)))
        fail_msg("%.200s: status %d, \"%s\"; want %d with \"%s\"", src, st, st ? err.message : out, want, needle);
    free(out);
}

static void expect_fail(const char *src, const char *needle)
{
    jinja_limits limits = jinja_limits_default();
    expect_fail_with(src, &limits, FK_ERR_FORMAT, needle);
}

/* `open`, n times `nest`, `middle`, n times `close`, then `end`: "{{ ((1)) }}" is ("{{ ", "(", ")", "1", 2, " }}"). */
static char *nested(const char *open, const char *nest, const char *close, const char *middle, int n, const char *end)
{
    const char *parts[5] = {open, nest, middle, close, end};
    const int times[5] = {1, n, 1, n, 1};
    size_t len = 1;
    for (int k = 0; k < 5; k++)
        len += (size_t)times[k] * strlen(parts[k]);
    char *s = malloc(len);
    if (!s)
        abort();
    size_t at = 0;
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < times[k]; i++) {
            memcpy(s + at, parts[k], strlen(parts[k]));
            at += strlen(parts[k]);
        }
    s[at] = '\0';
    return s;
}

static void test_unsupported_constructs_fail_clearly(void **state)
{
    (void)state;
    expect_fail("a\nb\n{% include 'x.jinja' %}", "line 3: the tag 'include' is not supported");
    expect_fail("{% extends 'base' %}", "line 1: the tag 'extends' is not supported");
    expect_fail("{% block b %}{% endblock %}", "line 1: the tag 'block' is not supported");
    expect_fail("{% import 'm' as m %}", "the tag 'import' is not supported");
    expect_fail("\n{% frobnicate %}", "line 2: unknown tag 'frobnicate'");
    expect_fail("{% for x in l recursive %}{% endfor %}", "line 1: recursive for loops are not supported");
    expect_fail("{{ range(*l) }}", "*args and **kwargs in calls are not supported");
    expect_fail("\n\n{{ s | wordwrap(5) }}", "line 3: filter 'wordwrap' is not supported");
    expect_fail("{{ s | groupby('x') }}", "filter 'groupby' is not supported");
    expect_fail("{{ s | nope }}", "line 1: unknown filter 'nope'");
    expect_fail("{{ s is nope }}", "line 1: unknown test 'nope'");
    expect_fail("{{ 'a\\N{BULLET}' }}", "\\N{...} escapes are not supported");
    expect_fail("{{ l[1, 2] }}", "subscripts with several indexes are not supported");
    expect_fail("\n{{ 'x'.zfill(3) }}", "line 2: str.zfill() is not supported");
    expect_fail("{{ '%s' % n }}", "printf-style string formatting");
    expect_fail("{{ '{}'.format(1) }}", "str.format() is not supported");
    expect_fail("{{ 9223372036854775807 + 1 }}", "integer overflow");
    expect_fail("{{ 99999999999999999999 }}", "integer literal 99999999999999999999 is out of range");
    expect_fail("{{ d.items }}", "cannot convert method 'items' to a string");
    expect_fail("{{ range }}", "cannot convert function 'range' to a string");
    expect_fail("{{ -2 ** 0.5 }}", "complex number");
    expect_fail("{% break %}", "line 1: 'break' outside loop");
    expect_fail("{% for x in l %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", "'continue' outside loop");
    expect_fail("{% if true %}\n\nunclosed", "line 3: unexpected end of template: expected 'elif'");
    expect_fail("{{ 'a\xe9' }}", "not valid UTF-8 at byte 5");
}

static void test_limits(void **state)
{
    (void)state;
    jinja_limits small = jinja_limits_default();
    small.max_depth = 30;
    small.max_iterations = 1000;
    small.max_steps = 5000;
    small.max_output = 1000;
    small.max_alloc = 1 << 20;

    /* Nesting while parsing: parentheses, unary operators, blocks; with the defaults and a small limit. */
    char *t = nested("{{ ", "(", ")", "1", 600, " }}");
    expect_fail(t, "nests more than 500 levels deep");
    free(t);
    t = nested("{{ ", "not ", "", "1", 600, " }}");
    expect_fail(t, "nests more than 500 levels deep");
    free(t);
    t = nested("{{ ", "-", "", "1", 600, " }}");
    expect_fail(t, "nests more than 500 levels deep");
    free(t);
    t = nested("", "{% if true %}", "{% endif %}", "x", 600, "");
    expect_fail(t, "nests more than 500 levels deep");
    free(t);
    t = nested("{{ ", "[", "]", "1", 40, " }}");
    expect_fail_with(t, &small, FK_ERR_FORMAT, "nests more than 30 levels deep");
    free(t);
    t = nested("{{ ", "[", "]", "1", 10, " }}");
    expect_fail_with(t, &small, FK_OK, "");
    free(t);

    /* Nesting while rendering: unbounded recursion, and namespaces nested in namespaces printed. */
    expect_fail("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recurses) more than 500 levels deep");
    expect_fail_with("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", &small, FK_ERR_FORMAT,
                     "more than 30 levels deep");
    expect_fail("{% set h = namespace(c=none) %}{% for i in range(2000) %}{% set h.c = namespace(next=h.c) %}"
                "{% endfor %}{{ h }}",
                "namespaces nested more than 500 deep");
    /* Values nested in values (lists, dicts): at most 1000 levels, as JSON readers allow. */
    expect_fail("{% set h = namespace(l=[]) %}{% for i in range(1500) %}{% set h.l = [h.l] %}{% endfor %}",
                "values nested more than 1000 deep");

    /* Loop iterations and macro calls. */
    expect_fail("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                "more than 1000000 loop iterations and macro calls");
    expect_fail_with("{% for i in range(2000) %}{% endfor %}", &small, FK_ERR_FORMAT, "more than 1000 loop");
    expect_fail_with("{% for i in range(999) %}{% endfor %}", &small, FK_OK, "");
    jinja_limits few_calls = jinja_limits_default();
    few_calls.max_iterations = 1000;
    expect_fail_with("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}",
                     &few_calls, FK_ERR_FORMAT, "more than 1000 loop iterations and macro calls");

    /* Evaluation steps: work that is neither a loop nor output, such as scanning a long string again and again. */
    expect_fail("{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{% if 'y' in s %}{% endif %}{% endfor %}",
                "more than 100000000 evaluation steps");
    expect_fail_with("{% for i in range(900) %}{% set x = ((i + 1) * 2 - 3) // 4 %}{% endfor %}", &small, FK_ERR_FORMAT,
                     "more than 5000 evaluation steps");

    /* Output, and any one captured block. */
    expect_fail("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "exceeds 67108864 bytes");
    expect_fail_with("{{ 'x' * 1001 }}", &small, FK_ERR_FORMAT, "the rendered text exceeds 1000 bytes");
    expect_fail_with("{% set b %}{% for i in range(300) %}abcd{% endfor %}{% endset %}", &small, FK_ERR_FORMAT,
                     "exceeds 1000 bytes");
    expect_fail_with("{{ 'x' * 1000 }}", &small, FK_OK, "");

    /* Allocation: a string doubled until it is huge, or asked for at once. */
    expect_fail("{{ 'x' * 2000000000 }}", "allocated more than 1073741824 bytes");
    expect_fail_with("{% set h = namespace(s='xx') %}{% for i in range(64) %}{% set h.s = h.s + h.s %}{% endfor %}",
                     &small, FK_ERR_FORMAT, "allocated more than 1048576 bytes");
    expect_fail_with("{{ range(100000) | list | length }}", &small, FK_ERR_FORMAT, "allocated more than");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_jinja2),
        cmocka_unit_test(test_unsupported_constructs_fail_clearly),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
