/* jinja_filter.c — jinja2 3.1's builtin filters and tests (see jinja_filter.h), each following its jinja2
 * implementation: the same parameters, defaults, Python conversions (soft_str, int(), float()) and the same results
 * for the values a chat template sees. Filters that yield generators in jinja2 (map, select, reverse, ...) yield
 * lists here. */
#include "jinja_filter.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#include "jinja_format.h"
#include "jinja_ops.h"
#include "jinja_str.h"

typedef fk_status (*filter_fn)(jrt *rt, jv value, const jargs *a, jv *out);
typedef fk_status (*test_fn)(jrt *rt, jv value, const jargs *a, bool *out);

/* Binds a filter's arguments (after the value) to its parameters. */
#define BIND(fname, params, n_required, slots, given)                                                          \
    do {                                                                                                        \
        fk_status bind_st = jargs_bind(rt, fname, a, params, sizeof params / sizeof params[0], n_required,      \
                                       slots, &given);                                                          \
        if (bind_st)                                                                                            \
            return bind_st;                                                                                     \
    } while (0)

static const jargs no_args = {0};

/* ---- helpers ---- */

/* Lower-cases strings (jinja2's ignore_case); other values as they are. New reference. */
static fk_status ignore_case(jrt *rt, jv v, jv *out)
{
    if (v.type != JV_STR) {
        *out = jv_ref(v);
        return FK_OK;
    }
    return pystr_case_map(rt, v.u.s, PYSTR_LOWER, out);
}

/* jinja2's make_attrgetter: "a.b.0" looked up part by part with getitem (digit parts as integers), then
 * `default` for an undefined result, then lower-casing when ignore_case. New reference. */
static fk_status get_attribute(jrt *rt, jv item, jv attribute, jv dflt, bool lower, jv *out)
{
    fk_status st = FK_OK;
    jv cur = jv_ref(item);
    if (attribute.type == JV_STR) {
        const jstr *s = attribute.u.s;
        for (size_t at = 0; at <= s->len && !st;) {
            const char *dot = memchr(s->data + at, '.', s->len - at);
            size_t end = dot ? (size_t)(dot - s->data) : s->len;
            bool digits = end > at;
            for (size_t i = at; i < end; i++)
                digits &= s->data[i] >= '0' && s->data[i] <= '9';
            jv part;
            if (digits && end - at < 18)
                part = jv_int(strtoll(s->data + at, NULL, 10));
            else if ((st = jv_str(rt, s->data + at, end - at, &part)))
                break;
            jv next;
            st = jv_getitem(rt, cur, part, &next);
            jv_unref(part);
            jv_unref(cur);
            cur = st ? jv_none() : next;
            if (!st && dflt.type != JV_NONE && cur.type == JV_UNDEFINED) {
                jv_unref(cur);
                cur = jv_ref(dflt);
            }
            at = end + 1;
        }
    } else if (attribute.type != JV_NONE) {
        jv next;
        st = jv_getitem(rt, cur, attribute, &next);
        jv_unref(cur);
        cur = st ? jv_none() : next;
    }
    if (st || !lower) {
        *out = cur;
        return st;
    }
    st = ignore_case(rt, cur, out);
    jv_unref(cur);
    return st;
}

/* Stable merge sort of items by keys (both [n]); reverse as Python's sorted(reverse=True). */
static fk_status sort_by(jrt *rt, jv *items, jv *keys, jv *tmp_items, jv *tmp_keys, size_t n, bool reverse)
{
    if (n < 2)
        return FK_OK;
    size_t h = n / 2;
    fk_status st = sort_by(rt, items, keys, tmp_items, tmp_keys, h, reverse);
    if (!st)
        st = sort_by(rt, items + h, keys + h, tmp_items, tmp_keys, n - h, reverse);
    size_t i = 0, j = h, k = 0;
    while (!st && (i < h || j < n)) {
        bool right = i >= h;
        if (!right && j < n) {
            int c;
            st = reverse ? jv_cmp(rt, keys[i], keys[j], &c) : jv_cmp(rt, keys[j], keys[i], &c);
            right = c == -1;
        }
        size_t from = right ? j++ : i++;
        tmp_items[k] = items[from];
        tmp_keys[k++] = keys[from];
    }
    if (!st) {
        memcpy(items, tmp_items, n * sizeof *items);
        memcpy(keys, tmp_keys, n * sizeof *keys);
    }
    return st;
}

/* A new list of items sorted by key_of(item) (keys computed once, as Python's key=). */
typedef fk_status (*key_fn)(jrt *rt, jv item, void *ctx, jv *key);

static fk_status sorted(jrt *rt, jv list, key_fn key_of, void *ctx, bool reverse, jv *out)
{
    size_t n = list.u.l->n;
    jv *buf = jrt_alloc(rt, 4 * (n ? n : 1) * sizeof *buf);
    if (!buf)
        return rt->err->status;
    jv *items = buf, *keys = buf + n, *ti = buf + 2 * n, *tk = buf + 3 * n;
    fk_status st = FK_OK;
    size_t made = 0;
    for (; made < n && !st; made++) {
        items[made] = list.u.l->items[made];
        if ((st = key_of(rt, items[made], ctx, &keys[made])))
            break;
    }
    if (!st)
        st = sort_by(rt, items, keys, ti, tk, n, reverse);
    if (!st)
        st = jv_list(rt, n, false, out);
    for (size_t i = 0; i < n && !st; i++)
        st = jv_list_push(rt, out->u.l, jv_ref(items[i]));
    for (size_t i = 0; i < made; i++)
        jv_unref(keys[i]);
    free(buf);
    return st;
}

typedef struct attr_key {
    jv attribute; /* JV_NONE, a name, or "a,b" (multi: a list of keys) */
    bool lower, multi;
} attr_key;

static fk_status key_by_attribute(jrt *rt, jv item, void *ctx, jv *key)
{
    const attr_key *k = ctx;
    if (!k->multi || k->attribute.type != JV_STR)
        return get_attribute(rt, item, k->attribute, jv_none(), k->lower, key);
    /* make_multi_attrgetter: the keys of "a,b" as a list, compared item by item. */
    const jstr *spec = k->attribute.u.s;
    fk_status st = jv_list(rt, 1, false, key);
    for (size_t at = 0; at <= spec->len && !st;) {
        const char *comma = memchr(spec->data + at, ',', spec->len - at);
        size_t end = comma ? (size_t)(comma - spec->data) : spec->len;
        jv name, one;
        if ((st = jv_str(rt, spec->data + at, end - at, &name)))
            break;
        if (!(st = get_attribute(rt, item, name, jv_none(), k->lower, &one)))
            st = jv_list_push(rt, key->u.l, one);
        jv_unref(name);
        at = end + 1;
    }
    if (st)
        jv_clear(key);
    return st;
}

/* ---- filters ---- */

static fk_status f_abs(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    if (v.type == JV_FLOAT) {
        *out = jv_float(fabs(v.u.f));
        return FK_OK;
    }
    if (v.type == JV_INT || v.type == JV_BOOL) {
        int64_t i = v.type == JV_BOOL ? v.u.b : v.u.i;
        if (i == INT64_MIN)
            return jrt_fail(rt, "integer overflow (beyond 64 bits)");
        *out = jv_int(i < 0 ? -i : i);
        return FK_OK;
    }
    return jrt_fail(rt, "bad operand type for abs(): '%s'", jv_type_name(v));
}

static fk_status f_batch(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"linecount", "fill_with"};
    jv p[2] = {jv_none(), jv_none()};
    unsigned given;
    BIND("batch", params, 1, p, given);
    if (p[0].type != JV_INT || p[0].u.i <= 0)
        return jrt_fail(rt, "batch(): linecount must be a positive integer");
    size_t count = (size_t)p[0].u.i;
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    st = jv_list(rt, 0, false, out);
    jv row = jv_none();
    for (size_t i = 0; i < items.u.l->n && !st; i++) {
        if (i % count == 0) {
            if (row.type == JV_LIST && (st = jv_list_push(rt, out->u.l, row)))
                break;
            if ((st = jv_list(rt, count, false, &row)))
                break;
        }
        st = jv_list_push(rt, row.u.l, jv_ref(items.u.l->items[i]));
    }
    if (!st && row.type == JV_LIST) {
        while (!st && p[1].type != JV_NONE && row.u.l->n < count)
            st = jv_list_push(rt, row.u.l, jv_ref(p[1]));
        if (!st)
            st = jv_list_push(rt, out->u.l, row);
        row = jv_none();
    }
    jv_unref(row);
    jv_unref(items);
    if (st && out->type == JV_LIST)
        jv_clear(out);
    return st;
}

/* A string filter: str(value) through a case mapping. */
static fk_status case_filter(jrt *rt, jv v, pystr_case mode, jv *out)
{
    jv s;
    fk_status st = jv_to_str(rt, v, &s);
    if (st)
        return st;
    st = pystr_case_map(rt, s.u.s, mode, out);
    jv_unref(s);
    return st;
}

static fk_status f_capitalize(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    return case_filter(rt, v, PYSTR_CAPITALIZE, out);
}

static fk_status f_lower(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    return case_filter(rt, v, PYSTR_LOWER, out);
}

static fk_status f_upper(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    return case_filter(rt, v, PYSTR_UPPER, out);
}

static fk_status f_title(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    return case_filter(rt, v, PYSTR_WORDS, out);
}

static fk_status f_center(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"width"};
    jv p[1] = {jv_int(80)};
    unsigned given;
    BIND("center", params, 0, p, given);
    if (p[0].type != JV_INT)
        return jrt_fail(rt, "center(): width must be an integer");
    jv s;
    fk_status st = jv_to_str(rt, v, &s);
    if (st)
        return st;
    int64_t width = p[0].u.i, n = (int64_t)s.u.s->ncp;
    if (width <= n) {
        *out = s;
        return FK_OK;
    }
    if (width - n > (int64_t)rt->limits.max_output) {
        jv_unref(s);
        return jrt_fail(rt, "center(): width %lld is too large", (long long)width);
    }
    /* CPython's str.center: the odd space goes left when both the margin and the width are odd. */
    int64_t marg = width - n, left = marg / 2 + (marg & width & 1);
    jbuf b = {.max = SIZE_MAX};
    for (int64_t i = 0; i < left && !st; i++)
        st = jbuf_putc(rt, &b, ' ');
    if (!st)
        st = jbuf_put(rt, &b, s.u.s->data, s.u.s->len);
    for (int64_t i = 0; i < marg - left && !st; i++)
        st = jbuf_putc(rt, &b, ' ');
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    jv_unref(s);
    return st;
}

static fk_status f_default(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"default_value", "boolean"};
    jv p[2] = {jv_none(), jv_bool(false)};
    unsigned given;
    BIND("default", params, 0, p, given);
    if (v.type == JV_UNDEFINED || (jv_truthy(p[1]) && !jv_truthy(v)))
        return (given & 1) ? (*out = jv_ref(p[0]), FK_OK) : jv_str(rt, "", 0, out);
    *out = jv_ref(v);
    return FK_OK;
}

static fk_status pair_key(jrt *rt, jv item, void *ctx, jv *key)
{
    const int *how = ctx; /* [position, case sensitive] */
    jv v = item.u.l->items[how[0]];
    if (how[1]) {
        *key = jv_ref(v);
        return FK_OK;
    }
    return ignore_case(rt, v, key);
}

static fk_status f_dictsort(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"case_sensitive", "by", "reverse"};
    jv p[3] = {jv_bool(false), jv_none(), jv_bool(false)};
    unsigned given;
    BIND("dictsort", params, 0, p, given);
    int how[2] = {0, jv_truthy(p[0])};
    if (given & 2) {
        if (p[1].type == JV_STR && !strcmp(p[1].u.s->data, "value"))
            how[0] = 1;
        else if (!(p[1].type == JV_STR && !strcmp(p[1].u.s->data, "key")))
            return jrt_fail(rt, "You can only sort by either \"key\" or \"value\"");
    }
    if (v.type != JV_DICT)
        return jrt_fail(rt, "dictsort(): '%s' object has no attribute 'items'", jv_type_name(v));
    jv items;
    fk_status st = jinja_method_call(rt, jinja_method_find(v, "items", &(bool){0}), v, &no_args, &items);
    if (st)
        return st;
    st = sorted(rt, items, pair_key, how, jv_truthy(p[2]), out);
    jv_unref(items);
    return st;
}

static fk_status f_escape(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    jv s;
    fk_status st = jv_to_str(rt, v, &s);
    if (st)
        return st;
    jbuf b = {.max = SIZE_MAX};
    for (size_t i = 0; i < s.u.s->len && !st; i++) {
        char c = s.u.s->data[i];
        const char *rep = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&#34;" : c == '\'' ? "&#39;" : NULL;
        st = rep ? jbuf_put(rt, &b, rep, strlen(rep)) : jbuf_putc(rt, &b, c);
    }
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    jv_unref(s);
    return st;
}

static fk_status f_first(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    if (items.u.l->n)
        *out = jv_ref(items.u.l->items[0]);
    else
        st = jv_undefined_why(rt, out, "No first item, sequence was empty.");
    jv_unref(items);
    return st;
}

static fk_status f_last(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    if (v.type != JV_LIST && v.type != JV_STR && v.type != JV_DICT)
        return jrt_fail(rt, "'%s' object is not reversible", jv_type_name(v));
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    if (items.u.l->n)
        *out = jv_ref(items.u.l->items[items.u.l->n - 1]);
    else
        st = jv_undefined_why(rt, out, "No last item, sequence was empty.");
    jv_unref(items);
    return st;
}

/* Python's float(str): optional whitespace, sign, digits with single underscores, inf/nan. */
static bool parse_float(const jstr *s, double *out)
{
    size_t a, b;
    pystr_strip(s->data, s->len, NULL, PYSTR_BOTH, &a, &b);
    if (a == b || b - a > 400)
        return false;
    char buf[401];
    size_t n = 0;
    for (size_t i = a; i < b; i++) {
        char c = s->data[i];
        if (c == '_') {
            bool between = i > a && i + 1 < b && s->data[i - 1] >= '0' && s->data[i - 1] <= '9' &&
                           s->data[i + 1] >= '0' && s->data[i + 1] <= '9';
            if (!between)
                return false;
            continue;
        }
        if (!strchr("0123456789+-.eEinfatyINFATY", c) || !c)
            return false;
        buf[n++] = c;
    }
    buf[n] = '\0';
    const char *p = buf + (buf[0] == '+' || buf[0] == '-');
    bool word = !strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "nan");
    if (!word && strpbrk(p, "iInNaAfFtTyY"))
        return false;
    char *end;
    errno = 0;
    *out = strtod(buf, &end);
    return *end == '\0' && end != buf;
}

/* Python's int(str, base): optional whitespace, sign, the base's prefix (0x, 0o, 0b) when it matches, digits with
 * single underscores. */
static bool parse_int(const jstr *s, int base, int64_t *out)
{
    size_t a, b;
    pystr_strip(s->data, s->len, NULL, PYSTR_BOTH, &a, &b);
    const char *d = s->data;
    bool neg = false;
    if (a < b && (d[a] == '+' || d[a] == '-'))
        neg = d[a++] == '-';
    if (b - a >= 2 && d[a] == '0') {
        char p = (char)(d[a + 1] | 0x20);
        if ((p == 'x' && (base == 16 || base == 0)) || (p == 'o' && (base == 8 || base == 0)) ||
            (p == 'b' && (base == 2 || base == 0))) {
            base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
            a += 2;
            if (a < b && d[a] == '_')
                a++;
        }
    }
    if (base == 0)
        base = 10;
    if (a == b)
        return false;
    uint64_t v = 0;
    for (size_t i = a; i < b; i++) {
        char c = d[i];
        if (c == '_' && i > a && i + 1 < b && d[i + 1] != '_')
            continue;
        int digit = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
        if (digit >= base || v > (UINT64_MAX - (uint64_t)digit) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)digit;
    }
    if (v > (uint64_t)INT64_MAX + neg)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static fk_status f_float(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"default"};
    jv p[1] = {jv_float(0.0)};
    unsigned given;
    BIND("float", params, 0, p, given);
    double f;
    if (v.type == JV_FLOAT || v.type == JV_INT || v.type == JV_BOOL)
        *out = jv_float(v.type == JV_FLOAT ? v.u.f : v.type == JV_INT ? (double)v.u.i : v.u.b);
    else if (v.type == JV_STR && parse_float(v.u.s, &f))
        *out = jv_float(f);
    else
        *out = jv_ref(p[0]);
    return FK_OK;
}

static fk_status f_int(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"default", "base"};
    jv p[2] = {jv_int(0), jv_int(10)};
    unsigned given;
    BIND("int", params, 0, p, given);
    int64_t i;
    double f;
    int base = p[1].type == JV_INT && p[1].u.i >= 0 && p[1].u.i <= 36 && p[1].u.i != 1 ? (int)p[1].u.i : 10;
    if (v.type == JV_INT || v.type == JV_BOOL) {
        *out = jv_int(v.type == JV_INT ? v.u.i : v.u.b);
    } else if (v.type == JV_FLOAT && isfinite(v.u.f) && fabs(v.u.f) < 9.2e18) {
        *out = jv_int((int64_t)v.u.f);
    } else if (v.type == JV_STR && parse_int(v.u.s, base, &i)) {
        *out = jv_int(i);
    } else if (v.type == JV_STR && parse_float(v.u.s, &f) && isfinite(f) && fabs(f) < 9.2e18) {
        *out = jv_int((int64_t)f); /* "42.23"|int is 42 */
    } else {
        *out = jv_ref(p[0]);
    }
    return FK_OK;
}

static fk_status f_indent(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"width", "first", "blank"};
    jv p[3] = {jv_int(4), jv_bool(false), jv_bool(false)};
    unsigned given;
    BIND("indent", params, 0, p, given);
    jbuf ind = {.max = SIZE_MAX}, b = {.max = SIZE_MAX};
    fk_status st = FK_OK;
    if (p[0].type == JV_STR)
        st = jbuf_put(rt, &ind, p[0].u.s->data, p[0].u.s->len);
    else if (p[0].type == JV_INT && p[0].u.i > (int64_t)rt->limits.max_output)
        st = jrt_fail(rt, "indent(): width %lld is too large", (long long)p[0].u.i);
    else if (p[0].type == JV_INT)
        for (int64_t i = 0; i < p[0].u.i && !st; i++)
            st = jbuf_putc(rt, &ind, ' ');
    else
        st = jrt_fail(rt, "indent(): width must be an integer or a string");
    jv s = jv_none(), lines = jv_none();
    if (!st)
        st = jv_to_str(rt, v, &s);
    /* jinja2 appends a newline first ("necessary for splitlines"), so a trailing newline yields an empty line. */
    if (!st) {
        jv nl, with_nl;
        if (!(st = jv_str(rt, "\n", 1, &nl))) {
            st = jv_binop(rt, JOP_ADD, s, nl, &with_nl);
            jv_unref(nl);
            if (!st) {
                st = pystr_splitlines(rt, with_nl.u.s, false, &lines);
                jv_unref(with_nl);
            }
        }
    }
    bool blank = jv_truthy(p[2]);
    if (!st && jv_truthy(p[1]))
        st = jbuf_put(rt, &b, ind.data ? ind.data : "", ind.len);
    for (size_t i = 0; !st && lines.type == JV_LIST && i < lines.u.l->n; i++) {
        const jstr *line = lines.u.l->items[i].u.s;
        if (i)
            st = jbuf_putc(rt, &b, '\n');
        if (!st && i && (blank || line->len))
            st = jbuf_put(rt, &b, ind.data ? ind.data : "", ind.len);
        if (!st)
            st = jbuf_put(rt, &b, line->data, line->len);
    }
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&ind);
    jbuf_free(&b);
    jv_unref(s);
    jv_unref(lines);
    return st;
}

static fk_status f_items(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    if (v.type == JV_UNDEFINED)
        return jv_list(rt, 0, false, out);
    if (v.type != JV_DICT)
        return jrt_fail(rt, "Can only get item pairs from a mapping.");
    return jinja_method_call(rt, jinja_method_find(v, "items", &(bool){0}), v, &no_args, out);
}

static fk_status f_join(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"d", "attribute"};
    jv p[2] = {jv_none(), jv_none()};
    unsigned given;
    BIND("join", params, 0, p, given);
    jv items, sep = jv_none();
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    if (given & 1)
        st = jv_to_str(rt, p[0], &sep);
    jbuf b = {.max = SIZE_MAX};
    for (size_t i = 0; i < items.u.l->n && !st; i++) {
        if (i && sep.type == JV_STR)
            st = jbuf_put(rt, &b, sep.u.s->data, sep.u.s->len);
        jv x;
        if (!st && !(st = get_attribute(rt, items.u.l->items[i], p[1], jv_none(), false, &x))) {
            st = jfmt_str(rt, &b, x);
            jv_unref(x);
        }
    }
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    jv_unref(sep);
    jv_unref(items);
    return st;
}

static fk_status f_length(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    int64_t n;
    fk_status st = jv_len(rt, v, &n);
    if (!st)
        *out = jv_int(n);
    return st;
}

static fk_status f_list(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    if (!(st = jv_list(rt, items.u.l->n, false, out)))
        for (size_t i = 0; i < items.u.l->n && !st; i++)
            st = jv_list_push(rt, out->u.l, jv_ref(items.u.l->items[i]));
    jv_unref(items);
    return st;
}

/* The arguments after the first n positional ones. */
static jargs rest(const jargs *a, size_t n)
{
    return (jargs){.pos = a->pos + n, .n_pos = a->n_pos - n, .kw_names = a->kw_names, .kw = a->kw, .n_kw = a->n_kw};
}

static fk_status f_map(jrt *rt, jv v, const jargs *a, jv *out)
{
    fk_status st = jv_list(rt, 0, false, out);
    if (st || !jv_truthy(v))
        return st;
    jv attribute = jv_none(), dflt = jv_none();
    int filter = -1;
    if (a->n_pos == 0) {
        for (size_t k = 0; k < a->n_kw; k++) {
            if (!strcmp(a->kw_names[k], "attribute"))
                attribute = a->kw[k];
            else if (!strcmp(a->kw_names[k], "default"))
                dflt = a->kw[k];
            else
                st = jrt_fail(rt, "Unexpected keyword argument '%s'", a->kw_names[k]);
        }
        if (!st && attribute.type == JV_NONE)
            st = jrt_fail(rt, "map requires a filter argument");
    } else if (a->pos[0].type != JV_STR || (filter = jinja_filter_find(a->pos[0].u.s->data)) < 0) {
        jv name = a->pos[0];
        st = name.type == JV_STR ? jrt_fail(rt, "No filter named '%s'.", name.u.s->data)
                                 : jrt_fail(rt, "map(): the filter name must be a string");
    }
    jv items = jv_none();
    if (!st)
        st = jv_iter(rt, v, &items);
    jargs more = rest(a, 1);
    for (size_t i = 0; !st && i < items.u.l->n; i++) {
        jv x;
        jv item = items.u.l->items[i];
        st = filter >= 0 ? jinja_filter_apply(rt, filter, item, &more, &x)
                         : get_attribute(rt, item, attribute, dflt, false, &x);
        if (!st)
            st = jv_list_push(rt, out->u.l, x);
    }
    jv_unref(items);
    if (st)
        jv_clear(out);
    return st;
}

static fk_status min_max(jrt *rt, jv v, const jargs *a, bool max, jv *out)
{
    static const char *const params[] = {"case_sensitive", "attribute"};
    jv p[2] = {jv_bool(false), jv_none()};
    unsigned given;
    BIND(max ? "max" : "min", params, 0, p, given);
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    if (items.u.l->n == 0) {
        jv_unref(items);
        return jv_undefined_why(rt, out, "No aggregated item, sequence was empty.");
    }
    bool lower = !jv_truthy(p[0]);
    size_t best = 0;
    jv best_key;
    st = get_attribute(rt, items.u.l->items[0], p[1], jv_none(), lower, &best_key);
    for (size_t i = 1; i < items.u.l->n && !st; i++) {
        jv key;
        int c;
        if ((st = get_attribute(rt, items.u.l->items[i], p[1], jv_none(), lower, &key)))
            break;
        /* Python's min/max keep the first of equal items. */
        if (!(st = jv_cmp(rt, key, best_key, &c)) && c == (max ? 1 : -1)) {
            jv_unref(best_key);
            best_key = key;
            best = i;
        } else {
            jv_unref(key);
        }
    }
    if (!st) {
        *out = jv_ref(items.u.l->items[best]);
        jv_unref(best_key);
    }
    jv_unref(items);
    return st;
}

static fk_status f_max(jrt *rt, jv v, const jargs *a, jv *out)
{
    return min_max(rt, v, a, true, out);
}

static fk_status f_min(jrt *rt, jv v, const jargs *a, jv *out)
{
    return min_max(rt, v, a, false, out);
}

/* select / reject / selectattr / rejectattr. */
static fk_status select_items(jrt *rt, jv v, const jargs *a, bool keep, bool by_attr, jv *out)
{
    fk_status st = jv_list(rt, 0, false, out);
    if (st || !jv_truthy(v))
        return st;
    size_t off = by_attr ? 1 : 0;
    if (by_attr && a->n_pos < 1)
        st = jrt_fail(rt, "Missing parameter for attribute name");
    int test = -1;
    if (!st && a->n_pos > off) {
        jv name = a->pos[off];
        if (name.type != JV_STR || (test = jinja_test_find(name.u.s->data)) < 0)
            st = name.type == JV_STR ? jrt_fail(rt, "No test named '%s'.", name.u.s->data)
                                     : jrt_fail(rt, "the test name must be a string");
    }
    jv items = jv_none();
    if (!st)
        st = jv_iter(rt, v, &items);
    jargs more = rest(a, a->n_pos > off ? off + 1 : a->n_pos);
    for (size_t i = 0; !st && i < items.u.l->n; i++) {
        jv item = items.u.l->items[i], x;
        if (by_attr)
            st = get_attribute(rt, item, a->pos[0], jv_none(), false, &x);
        else
            x = jv_ref(item);
        bool pass = false;
        if (!st) {
            if (test >= 0)
                st = jinja_test_apply(rt, test, x, &more, &pass);
            else
                pass = jv_truthy(x);
            jv_unref(x);
        }
        if (!st && pass == keep)
            st = jv_list_push(rt, out->u.l, jv_ref(item));
    }
    jv_unref(items);
    if (st)
        jv_clear(out);
    return st;
}

static fk_status f_select(jrt *rt, jv v, const jargs *a, jv *out)
{
    return select_items(rt, v, a, true, false, out);
}

static fk_status f_reject(jrt *rt, jv v, const jargs *a, jv *out)
{
    return select_items(rt, v, a, false, false, out);
}

static fk_status f_selectattr(jrt *rt, jv v, const jargs *a, jv *out)
{
    return select_items(rt, v, a, true, true, out);
}

static fk_status f_rejectattr(jrt *rt, jv v, const jargs *a, jv *out)
{
    return select_items(rt, v, a, false, true, out);
}

static fk_status f_replace(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"old", "new", "count"};
    jv p[3] = {jv_none(), jv_none(), jv_none()};
    unsigned given;
    BIND("replace", params, 2, p, given);
    jv s, o, n;
    fk_status st = jv_to_str(rt, v, &s);
    if (st)
        return st;
    if (!(st = jv_to_str(rt, p[0], &o))) {
        if (!(st = jv_to_str(rt, p[1], &n))) {
            int64_t count = -1;
            if (p[2].type == JV_INT)
                count = p[2].u.i;
            else if (p[2].type != JV_NONE)
                st = jrt_fail(rt, "replace(): count must be an integer");
            if (!st)
                st = pystr_replace(rt, s.u.s, o.u.s, n.u.s, count, out);
            jv_unref(n);
        }
        jv_unref(o);
    }
    jv_unref(s);
    return st;
}

static fk_status f_reverse(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    if (v.type == JV_STR)
        return jv_slice(rt, v, jv_none(), jv_none(), jv_int(-1), out);
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return jrt_fail(rt, "argument must be iterable");
    st = jv_slice(rt, items, jv_none(), jv_none(), jv_int(-1), out);
    jv_unref(items);
    if (!st && out->type == JV_LIST)
        out->u.l->tuple = false;
    return st;
}

/* Python's round(x, n) for floats: correctly rounded, ties to even, via the shortest repr of x * 10^n's neighbor
 * (CPython's double_round uses the exact decimal; printf with n digits is exact too). */
static double round_float(double x, int64_t n)
{
    if (!isfinite(x) || n > 308)
        return x;
    if (n < -308)
        return copysign(0.0, x);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*f", n >= 0 ? (int)n : 0, n >= 0 ? x : x / pow(10.0, (double)-n));
    double r = strtod(buf, NULL);
    if (n < 0) {
        /* Round half to even at the 10^-n place. */
        double scaled = x / pow(10.0, (double)-n);
        double fl = floor(scaled), diff = scaled - fl;
        double q = diff > 0.5 ? fl + 1 : diff < 0.5 ? fl : (fmod(fl, 2) == 0 ? fl : fl + 1);
        r = q * pow(10.0, (double)-n);
    }
    return r;
}

static fk_status f_round(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"precision", "method"};
    jv p[2] = {jv_int(0), jv_none()};
    unsigned given;
    BIND("round", params, 0, p, given);
    const char *method = p[1].type == JV_STR ? p[1].u.s->data : "common";
    if (p[1].type != JV_NONE && p[1].type != JV_STR)
        method = "";
    if (strcmp(method, "common") && strcmp(method, "ceil") && strcmp(method, "floor"))
        return jrt_fail(rt, "method must be common, ceil or floor");
    if (p[0].type != JV_INT && p[0].type != JV_BOOL)
        return jrt_fail(rt, "'%s' object cannot be interpreted as an integer", jv_type_name(p[0]));
    int64_t n = p[0].type == JV_BOOL ? p[0].u.b : p[0].u.i;
    if (!jv_is_number(v))
        return jrt_fail(rt, "type %s doesn't define __round__ method", jv_type_name(v));
    if (!strcmp(method, "common")) {
        if (v.type != JV_FLOAT) {
            /* round(int, n) stays an int (n < 0 rounds to tens, hundreds, ... half to even). */
            int64_t i = v.type == JV_BOOL ? v.u.b : v.u.i;
            if (n < 0 && n > -19) {
                int64_t m = 1;
                for (int64_t k = 0; k < -n; k++)
                    m *= 10;
                int64_t q = i / m, r = i % m;
                if (r < 0) {
                    r += m;
                    q -= 1;
                }
                if (2 * r > m || (2 * r == m && (q & 1)))
                    q += 1;
                i = q * m;
            } else if (n <= -19) {
                i = 0;
            }
            *out = jv_int(i);
            return FK_OK;
        }
        *out = jv_float(round_float(v.u.f, n));
        return FK_OK;
    }
    double x = v.type == JV_FLOAT ? v.u.f : (double)(v.type == JV_BOOL ? v.u.b : v.u.i);
    double scale = pow(10.0, (double)n);
    double r = (method[0] == 'c' ? ceil(x * scale) : floor(x * scale)) / scale;
    *out = v.type == JV_FLOAT || n < 0 ? jv_float(r) : jv_float(r);
    return FK_OK;
}

static fk_status f_string(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    return jv_to_str(rt, v, out);
}

static fk_status f_sort(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"reverse", "case_sensitive", "attribute"};
    jv p[3] = {jv_bool(false), jv_bool(false), jv_none()};
    unsigned given;
    BIND("sort", params, 0, p, given);
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    attr_key k = {.attribute = p[2], .lower = !jv_truthy(p[1]), .multi = true};
    st = sorted(rt, items, key_by_attribute, &k, jv_truthy(p[0]), out);
    jv_unref(items);
    return st;
}

static fk_status f_sum(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"attribute", "start"};
    jv p[2] = {jv_none(), jv_int(0)};
    unsigned given;
    BIND("sum", params, 0, p, given);
    jv items;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    jv acc = jv_ref(p[1]);
    for (size_t i = 0; i < items.u.l->n && !st; i++) {
        jv x, next;
        if ((st = get_attribute(rt, items.u.l->items[i], p[0], jv_none(), false, &x)))
            break;
        if (acc.type == JV_STR)
            st = jrt_fail(rt, "sum() can't sum strings [use ''.join(seq) instead]");
        else
            st = jv_binop(rt, JOP_ADD, acc, x, &next);
        jv_unref(x);
        if (!st) {
            jv_unref(acc);
            acc = next;
        }
    }
    jv_unref(items);
    if (st) {
        jv_unref(acc);
        return st;
    }
    *out = acc;
    return FK_OK;
}

/* transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False). */
static fk_status f_tojson(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
    jv p[4] = {jv_bool(false), jv_none(), jv_none(), jv_bool(false)};
    unsigned given;
    BIND("tojson", params, 0, p, given);
    jjson_opts o = {.ensure_ascii = jv_truthy(p[0]), .sort_keys = jv_truthy(p[3])};
    jbuf ind = {.max = SIZE_MAX}, b = {.max = SIZE_MAX};
    fk_status st = FK_OK;
    if (p[1].type == JV_STR) {
        o.indent_set = true;
        st = jbuf_put(rt, &ind, p[1].u.s->data, p[1].u.s->len);
    } else if (p[1].type == JV_INT || p[1].type == JV_BOOL) {
        o.indent_set = true;
        int64_t n = p[1].type == JV_BOOL ? p[1].u.b : p[1].u.i;
        if (n > 1024)
            st = jrt_fail(rt, "tojson(): indent %lld is too large", (long long)n);
        for (int64_t i = 0; i < n && !st; i++)
            st = jbuf_putc(rt, &ind, ' ');
    } else if (p[1].type != JV_NONE) {
        st = jrt_fail(rt, "tojson(): indent must be an integer or a string");
    }
    o.indent = ind.data ? ind.data : "";
    o.indent_len = ind.len;
    if (!st && p[2].type != JV_NONE) {
        if (p[2].type != JV_LIST || p[2].u.l->n != 2 || p[2].u.l->items[0].type != JV_STR ||
            p[2].u.l->items[1].type != JV_STR) {
            st = jrt_fail(rt, "tojson(): separators must be a pair of strings");
        } else {
            o.item_sep = p[2].u.l->items[0].u.s->data;
            o.item_sep_len = p[2].u.l->items[0].u.s->len;
            o.key_sep = p[2].u.l->items[1].u.s->data;
            o.key_sep_len = p[2].u.l->items[1].u.s->len;
        }
    }
    if (!st)
        st = jfmt_json(rt, &b, v, &o);
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&ind);
    jbuf_free(&b);
    return st;
}

static fk_status f_trim(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"chars"};
    jv p[1] = {jv_none()};
    unsigned given;
    BIND("trim", params, 0, p, given);
    if (p[0].type != JV_NONE && p[0].type != JV_STR)
        return jrt_fail(rt, "strip arg must be None or str");
    jv s;
    fk_status st = jv_to_str(rt, v, &s);
    if (st)
        return st;
    size_t from, to;
    pystr_strip(s.u.s->data, s.u.s->len, p[0].type == JV_STR ? p[0].u.s : NULL, PYSTR_BOTH, &from, &to);
    st = jv_str(rt, s.u.s->data + from, to - from, out);
    jv_unref(s);
    return st;
}

static fk_status f_unique(jrt *rt, jv v, const jargs *a, jv *out)
{
    static const char *const params[] = {"case_sensitive", "attribute"};
    jv p[2] = {jv_bool(false), jv_none()};
    unsigned given;
    BIND("unique", params, 0, p, given);
    jv items, seen;
    fk_status st = jv_iter(rt, v, &items);
    if (st)
        return st;
    if ((st = jv_list(rt, 0, false, &seen))) {
        jv_unref(items);
        return st;
    }
    st = jv_list(rt, 0, false, out);
    for (size_t i = 0; i < items.u.l->n && !st; i++) {
        jv key;
        bool dup;
        if ((st = get_attribute(rt, items.u.l->items[i], p[1], jv_none(), !jv_truthy(p[0]), &key)))
            break;
        if ((st = jv_contains(rt, seen, key, &dup))) {
            jv_unref(key);
            break;
        }
        if (dup) {
            jv_unref(key);
            continue;
        }
        if (!(st = jv_list_push(rt, seen.u.l, key)))
            st = jv_list_push(rt, out->u.l, jv_ref(items.u.l->items[i]));
    }
    jv_unref(seen);
    jv_unref(items);
    if (st && out->type == JV_LIST)
        jv_clear(out);
    return st;
}

static fk_status f_safe(jrt *rt, jv v, const jargs *a, jv *out)
{
    (void)a;
    return jv_to_str(rt, v, out);
}

static const struct {
    const char *name;
    filter_fn fn;
} filters[] = {
    {"abs", f_abs},           {"batch", f_batch},       {"capitalize", f_capitalize}, {"center", f_center},
    {"count", f_length},      {"d", f_default},         {"default", f_default},       {"dictsort", f_dictsort},
    {"e", f_escape},          {"escape", f_escape},     {"first", f_first},           {"float", f_float},
    {"forceescape", f_escape}, {"indent", f_indent},    {"int", f_int},               {"items", f_items},
    {"join", f_join},         {"last", f_last},         {"length", f_length},         {"list", f_list},
    {"lower", f_lower},       {"map", f_map},           {"max", f_max},               {"min", f_min},
    {"reject", f_reject},     {"rejectattr", f_rejectattr}, {"replace", f_replace},   {"reverse", f_reverse},
    {"round", f_round},       {"safe", f_safe},         {"select", f_select},         {"selectattr", f_selectattr},
    {"sort", f_sort},         {"string", f_string},     {"sum", f_sum},               {"title", f_title},
    {"tojson", f_tojson},     {"trim", f_trim},         {"unique", f_unique},         {"upper", f_upper},
};

enum { N_FILTERS = sizeof filters / sizeof filters[0] };

int jinja_filter_find(const char *name)
{
    for (int i = 0; i < N_FILTERS; i++)
        if (!strcmp(filters[i].name, name))
            return i;
    return -1;
}

bool jinja_filter_is_builtin(const char *name)
{
    static const char *const others[] = {"attr",    "filesizeformat", "format",   "groupby", "mark_safe",
                                         "pprint",  "random",         "slice",    "striptags", "truncate",
                                         "urlencode", "urlize",       "wordcount", "wordwrap", "xmlattr"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (!strcmp(others[i], name))
            return true;
    return false;
}

fk_status jinja_filter_apply(jrt *rt, int id, jv value, const jargs *args, jv *out)
{
    return filters[id].fn(rt, value, args, out);
}

/* ---- tests ---- */

/* The one argument of a test (sameas, divisibleby, eq, ...). */
static fk_status test_arg(jrt *rt, const char *name, const jargs *a, jv *out)
{
    if (a->n_pos != 1 || a->n_kw)
        return jrt_fail(rt, "%s() takes exactly one positional argument (%zu given)", name, a->n_pos + a->n_kw);
    *out = a->pos[0];
    return FK_OK;
}

static fk_status t_defined(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type != JV_UNDEFINED;
    return FK_OK;
}

static fk_status t_undefined(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_UNDEFINED;
    return FK_OK;
}

static fk_status t_none(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_NONE;
    return FK_OK;
}

static fk_status t_boolean(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_BOOL;
    return FK_OK;
}

static fk_status t_false(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_BOOL && !v.u.b;
    return FK_OK;
}

static fk_status t_true(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_BOOL && v.u.b;
    return FK_OK;
}

static fk_status t_integer(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_INT;
    return FK_OK;
}

static fk_status t_float(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_FLOAT;
    return FK_OK;
}

static fk_status t_number(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = jv_is_number(v);
    return FK_OK;
}

static fk_status t_string(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_STR;
    return FK_OK;
}

static fk_status t_mapping(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_DICT;
    return FK_OK;
}

static fk_status t_iterable(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_STR || v.type == JV_LIST || v.type == JV_DICT || v.type == JV_UNDEFINED ||
           v.type == JV_LOOP;
    return FK_OK;
}

static fk_status t_sequence(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_STR || v.type == JV_LIST || v.type == JV_DICT || v.type == JV_UNDEFINED;
    return FK_OK;
}

static fk_status t_callable(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_FUNC || v.type == JV_LOOP || v.type == JV_UNDEFINED;
    return FK_OK;
}

static fk_status t_escaped(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a, (void)v;
    *out = false;
    return FK_OK;
}

static fk_status t_sameas(jrt *rt, jv v, const jargs *a, bool *out)
{
    jv other = jv_none();
    fk_status st = test_arg(rt, "sameas", a, &other);
    if (st)
        return st;
    /* Python's `is`: None, True and False are singletons, the rest is identity. */
    if (v.type != other.type)
        *out = false;
    else if (v.type == JV_NONE || v.type == JV_UNDEFINED)
        *out = v.type == JV_NONE;
    else if (v.type == JV_BOOL || v.type == JV_INT)
        *out = v.u.i == other.u.i;
    else if (v.type == JV_FLOAT)
        *out = false;
    else
        *out = v.u.s == other.u.s;
    return FK_OK;
}

/* str(value).islower() / isupper(): some cased character, and none of the other case. */
static fk_status case_test(jrt *rt, jv v, bool lower, bool *out)
{
    jv s, swapped;
    fk_status st = jv_to_str(rt, v, &s);
    if (st)
        return st;
    jv mapped;
    if (!(st = pystr_case_map(rt, s.u.s, lower ? PYSTR_LOWER : PYSTR_UPPER, &mapped))) {
        if (!(st = pystr_case_map(rt, s.u.s, lower ? PYSTR_UPPER : PYSTR_LOWER, &swapped))) {
            bool eq1, eq2;
            st = jv_eq(rt, s, mapped, &eq1);
            if (!st)
                st = jv_eq(rt, s, swapped, &eq2);
            *out = !st && eq1 && !eq2;
            jv_unref(swapped);
        }
        jv_unref(mapped);
    }
    jv_unref(s);
    return st;
}

static fk_status t_lower(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)a;
    return case_test(rt, v, true, out);
}

static fk_status t_upper(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)a;
    return case_test(rt, v, false, out);
}

/* value % n == r */
static fk_status modulo_is(jrt *rt, jv v, jv n, int64_t r, bool *out)
{
    jv m;
    fk_status st = jv_binop(rt, JOP_MOD, v, n, &m);
    if (!st)
        st = jv_eq(rt, m, jv_int(r), out);
    jv_unref(m);
    return st;
}

static fk_status t_odd(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)a;
    return modulo_is(rt, v, jv_int(2), 1, out);
}

static fk_status t_even(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)a;
    return modulo_is(rt, v, jv_int(2), 0, out);
}

static fk_status t_divisibleby(jrt *rt, jv v, const jargs *a, bool *out)
{
    jv n = jv_none();
    fk_status st = test_arg(rt, "divisibleby", a, &n);
    return st ? st : modulo_is(rt, v, n, 0, out);
}

static fk_status compare_test(jrt *rt, const char *name, jv v, const jargs *a, int want, bool *out)
{
    jv other = jv_none();
    fk_status st = test_arg(rt, name, a, &other);
    if (st)
        return st;
    if (want == 0 || want == 3) {
        bool eq;
        st = jv_eq(rt, v, other, &eq);
        *out = want == 0 ? eq : !eq;
        return st;
    }
    int c;
    if ((st = jv_cmp(rt, v, other, &c)))
        return st;
    /* want: 1 <, 2 <=, 4 >, 5 >= */
    *out = c != 2 && (want == 1 ? c < 0 : want == 2 ? c <= 0 : want == 4 ? c > 0 : c >= 0);
    return FK_OK;
}

static fk_status t_eq(jrt *rt, jv v, const jargs *a, bool *out)
{
    return compare_test(rt, "eq", v, a, 0, out);
}

static fk_status t_ne(jrt *rt, jv v, const jargs *a, bool *out)
{
    return compare_test(rt, "ne", v, a, 3, out);
}

static fk_status t_lt(jrt *rt, jv v, const jargs *a, bool *out)
{
    return compare_test(rt, "lt", v, a, 1, out);
}

static fk_status t_le(jrt *rt, jv v, const jargs *a, bool *out)
{
    return compare_test(rt, "le", v, a, 2, out);
}

static fk_status t_gt(jrt *rt, jv v, const jargs *a, bool *out)
{
    return compare_test(rt, "gt", v, a, 4, out);
}

static fk_status t_ge(jrt *rt, jv v, const jargs *a, bool *out)
{
    return compare_test(rt, "ge", v, a, 5, out);
}

static fk_status t_in(jrt *rt, jv v, const jargs *a, bool *out)
{
    jv seq = jv_none();
    fk_status st = test_arg(rt, "in", a, &seq);
    return st ? st : jv_contains(rt, seq, v, out);
}

static fk_status t_filter(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_STR && jinja_filter_find(v.u.s->data) >= 0;
    return FK_OK;
}

static fk_status t_test(jrt *rt, jv v, const jargs *a, bool *out)
{
    (void)rt, (void)a;
    *out = v.type == JV_STR && jinja_test_find(v.u.s->data) >= 0;
    return FK_OK;
}

static const struct {
    const char *name;
    test_fn fn;
} tests[] = {
    {"defined", t_defined},     {"undefined", t_undefined}, {"none", t_none},       {"boolean", t_boolean},
    {"false", t_false},         {"true", t_true},           {"integer", t_integer}, {"float", t_float},
    {"number", t_number},       {"string", t_string},       {"mapping", t_mapping}, {"iterable", t_iterable},
    {"sequence", t_sequence},   {"callable", t_callable},   {"sameas", t_sameas},   {"escaped", t_escaped},
    {"lower", t_lower},         {"upper", t_upper},         {"odd", t_odd},         {"even", t_even},
    {"divisibleby", t_divisibleby}, {"eq", t_eq},           {"equalto", t_eq},      {"==", t_eq},
    {"ne", t_ne},               {"!=", t_ne},               {"lt", t_lt},           {"lessthan", t_lt},
    {"<", t_lt},                {"le", t_le},               {"<=", t_le},           {"gt", t_gt},
    {"greaterthan", t_gt},      {">", t_gt},                {"ge", t_ge},           {">=", t_ge},
    {"in", t_in},               {"filter", t_filter},       {"test", t_test},
};

int jinja_test_find(const char *name)
{
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strcmp(tests[i].name, name))
            return (int)i;
    return -1;
}

fk_status jinja_test_apply(jrt *rt, int id, jv value, const jargs *args, bool *out)
{
    return tests[id].fn(rt, value, args, out);
}
