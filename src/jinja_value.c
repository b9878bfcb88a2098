/* jinja_value.c — the interpreter's values: the render's budgets, allocation, reference counting, construction,
 * Python equality, ordering and truthiness, and values from JSON text. */
#include "jinja_value.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "utf8.h"

void jrt_init(jrt *rt, const jinja_limits *limits, fk_error *err)
{
    *rt = (jrt){.limits = *limits, .err = err};
    if (!err)
        rt->err = &rt->scratch;
}

void jrt_free(jrt *rt)
{
    /* Namespaces can reference each other (and themselves): they live until the render ends. */
    for (jns *ns = rt->namespaces, *next; ns; ns = next) {
        next = ns->next;
        jv_unref((jv){.type = JV_DICT, .u.d = ns->attrs});
        free(ns);
    }
    rt->namespaces = NULL;
}

fk_status jrt_fail(jrt *rt, const char *fmt, ...)
{
    char msg[FK_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fk_error_set(rt->err, FK_ERR_FORMAT, "line %d: %s", rt->line, msg);
}

fk_status jrt_charge(jrt *rt, uint64_t steps)
{
    rt->steps += steps;
    if (rt->steps > rt->limits.max_steps)
        return jrt_fail(rt, "the template took more than %llu evaluation steps",
                        (unsigned long long)rt->limits.max_steps);
    return FK_OK;
}

void *jrt_alloc(jrt *rt, size_t bytes)
{
    if (bytes > rt->limits.max_alloc - rt->allocated) {
        jrt_fail(rt, "the template allocated more than %zu bytes", rt->limits.max_alloc);
        return NULL;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fk_error_set(rt->err, FK_ERR_OUT_OF_MEMORY, "line %d: out of memory (%zu bytes)", rt->line, bytes);
        return NULL;
    }
    rt->allocated += bytes;
    return p;
}

/* Grows an array of n items of `size` bytes to hold at least `need`, charging the render. */
static fk_status failed(jrt *rt);

static fk_status grow(jrt *rt, void **items, size_t *cap, size_t n, size_t need, size_t size)
{
    if (need <= *cap)
        return FK_OK;
    size_t c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    void *p = jrt_alloc(rt, c * size);
    if (!p)
        return rt->err->status;
    if (n)
        memcpy(p, *items, n * size);
    free(*items);
    *items = p;
    *cap = c;
    return FK_OK;
}

/* The status of the failure jrt_alloc reported. */
static fk_status failed(jrt *rt)
{
    return rt->err->status;
}

fk_status jbuf_put(jrt *rt, jbuf *b, const char *s, size_t len)
{
    if (len > b->max - b->len)
        return jrt_fail(rt, "the rendered text exceeds %zu bytes", b->max);
    if (b->len + len + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 64;
        while (c < b->len + len + 1)
            c *= 2;
        char *p = jrt_alloc(rt, c);
        if (!p)
            return failed(rt);
        if (b->len)
            memcpy(p, b->data, b->len);
        free(b->data);
        b->data = p;
        b->cap = c;
    }
    if (len)
        memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
    return FK_OK;
}

fk_status jbuf_putc(jrt *rt, jbuf *b, char c)
{
    return jbuf_put(rt, b, &c, 1);
}

fk_status jbuf_printf(jrt *rt, jbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return jbuf_put(rt, b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

fk_status jbuf_to_str(jrt *rt, jbuf *b, jv *out)
{
    fk_status st = jv_str(rt, b->data ? b->data : "", b->len, out);
    b->len = 0;
    return st;
}

void jbuf_free(jbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- reference counting ---- */

static int32_t *refs_of(jv v)
{
    switch (v.type) {
    case JV_STR:
    case JV_UNDEFINED: return v.u.s ? &v.u.s->refs : NULL;
    case JV_LIST: return &v.u.l->refs;
    case JV_DICT: return &v.u.d->refs;
    case JV_FUNC: return &v.u.fn->refs;
    case JV_LOOP: return &v.u.loop->refs;
    default: return NULL;
    }
}

jv jv_ref(jv v)
{
    int32_t *r = refs_of(v);
    if (r && *r >= 0)
        ++*r;
    return v;
}

void jv_unref(jv v)
{
    int32_t *r = refs_of(v);
    if (!r || *r < 0 || --*r > 0)
        return;
    switch (v.type) {
    case JV_LIST:
        for (size_t i = 0; i < v.u.l->n; i++)
            jv_unref(v.u.l->items[i]);
        free(v.u.l->items);
        break;
    case JV_DICT:
        for (size_t i = 0; i < v.u.d->n; i++) {
            jv_unref(v.u.d->keys[i]);
            jv_unref(v.u.d->vals[i]);
        }
        free(v.u.d->keys);
        free(v.u.d->vals);
        break;
    case JV_FUNC: jv_unref(v.u.fn->self); break;
    case JV_LOOP:
        jv_unref((jv){.type = JV_LIST, .u.l = v.u.loop->items});
        jv_unref(v.u.loop->changed);
        break;
    default: break;
    }
    free(r); /* the refcount is every object's first member */
}

void jv_clear(jv *v)
{
    jv_unref(*v);
    *v = jv_none();
}

/* ---- construction ---- */

static size_t count_code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

fk_status jv_str_alloc(jrt *rt, size_t len, jstr **out)
{
    if (len > SIZE_MAX / 2)
        return jrt_fail(rt, "string too long");
    jstr *s = jrt_alloc(rt, sizeof *s + len + 1);
    if (!s)
        return failed(rt);
    s->refs = 1;
    s->len = len;
    s->data[len] = '\0';
    *out = s;
    return FK_OK;
}

jv jv_str_done(jstr *s)
{
    s->data[s->len] = '\0';
    s->ncp = count_code_points(s->data, s->len);
    return (jv){.type = JV_STR, .u.s = s};
}

fk_status jv_str(jrt *rt, const char *s, size_t len, jv *out)
{
    jstr *j;
    fk_status st = jv_str_alloc(rt, len, &j);
    if (st)
        return st;
    if (len)
        memcpy(j->data, s, len);
    *out = jv_str_done(j);
    return FK_OK;
}

jstr *jstr_immortal(const char *s, size_t len)
{
    jstr *j = malloc(sizeof *j + len + 1);
    if (!j)
        return NULL;
    j->refs = -1;
    j->len = len;
    if (len)
        memcpy(j->data, s, len);
    j->data[len] = '\0';
    j->ncp = count_code_points(s, len);
    return j;
}

void jstr_free_immortal(jstr *s)
{
    free(s);
}

fk_status jv_undefined_why(jrt *rt, jv *out, const char *fmt, ...)
{
    char msg[FK_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jv s;
    fk_status st = jv_str(rt, msg, strlen(msg), &s);
    if (st)
        return st;
    *out = (jv){.type = JV_UNDEFINED, .u.s = s.u.s};
    return FK_OK;
}

fk_status jv_list(jrt *rt, size_t cap, bool tuple, jv *out)
{
    *out = jv_none();
    jlist *l = jrt_alloc(rt, sizeof *l);
    if (!l)
        return failed(rt);
    *l = (jlist){.refs = 1, .tuple = tuple};
    *out = (jv){.type = JV_LIST, .u.l = l};
    fk_status st = grow(rt, (void **)&l->items, &l->cap, 0, cap, sizeof(jv));
    if (st)
        jv_clear(out);
    return st;
}

static int depth_of(jv v)
{
    return v.type == JV_LIST ? v.u.l->depth : v.type == JV_DICT ? v.u.d->depth : 0;
}

/* A container's new depth after adding v; fails beyond JV_MAX_DEPTH. */
static fk_status deepen(jrt *rt, int *depth, jv v)
{
    int d = depth_of(v) + 1;
    if (d > JV_MAX_DEPTH)
        return jrt_fail(rt, "values nested more than %d deep", JV_MAX_DEPTH);
    if (d > *depth)
        *depth = d;
    return FK_OK;
}

fk_status jv_list_push(jrt *rt, jlist *l, jv item)
{
    fk_status st = deepen(rt, &l->depth, item);
    if (!st)
        st = grow(rt, (void **)&l->items, &l->cap, l->n, l->n + 1, sizeof(jv));
    if (st) {
        jv_unref(item);
        return st;
    }
    l->items[l->n++] = item;
    return FK_OK;
}

fk_status jv_dict(jrt *rt, size_t cap, jv *out)
{
    *out = jv_none();
    jdict *d = jrt_alloc(rt, sizeof *d);
    if (!d)
        return failed(rt);
    *d = (jdict){.refs = 1};
    *out = (jv){.type = JV_DICT, .u.d = d};
    if (cap == 0)
        return FK_OK;
    size_t kcap = 0;
    fk_status st = grow(rt, (void **)&d->keys, &kcap, 0, cap, sizeof(jv));
    if (!st)
        st = grow(rt, (void **)&d->vals, &d->cap, 0, cap, sizeof(jv));
    if (st)
        jv_clear(out);
    return st;
}

static bool hashable(jv v)
{
    if (v.type == JV_LIST && v.u.l->tuple) {
        for (size_t i = 0; i < v.u.l->n; i++)
            if (!hashable(v.u.l->items[i]))
                return false;
        return true;
    }
    return v.type != JV_LIST && v.type != JV_DICT;
}

fk_status jv_dict_find(jrt *rt, const jdict *d, jv key, const jv **out)
{
    *out = NULL;
    if (!hashable(key))
        return jrt_fail(rt, "unhashable type: '%s'", jv_type_name(key));
    for (size_t i = 0; i < d->n; i++) {
        bool eq;
        fk_status st = jv_eq(rt, d->keys[i], key, &eq);
        if (st)
            return st;
        if (eq) {
            *out = &d->vals[i];
            return FK_OK;
        }
    }
    return FK_OK;
}

const jv *jv_dict_get(jrt *rt, const jdict *d, const char *key)
{
    size_t len = strlen(key);
    if (jrt_charge(rt, d->n))
        return NULL;
    for (size_t i = 0; i < d->n; i++) {
        const jv *k = &d->keys[i];
        if (k->type == JV_STR && k->u.s->len == len && memcmp(k->u.s->data, key, len) == 0)
            return &d->vals[i];
    }
    return NULL;
}

fk_status jv_dict_set(jrt *rt, jdict *d, jv key, jv val)
{
    const jv *found;
    fk_status st = jv_dict_find(rt, d, key, &found);
    if (!st && found) {
        jv *slot = &d->vals[found - d->vals];
        jv_unref(*slot);
        *slot = val;
        jv_unref(key);
        return deepen(rt, &d->depth, val);
    }
    if (!st)
        st = deepen(rt, &d->depth, val);
    if (!st) {
        size_t kcap = d->cap;
        st = grow(rt, (void **)&d->keys, &kcap, d->n, d->n + 1, sizeof(jv));
        if (!st)
            st = grow(rt, (void **)&d->vals, &d->cap, d->n, d->n + 1, sizeof(jv));
    }
    if (st) {
        jv_unref(key);
        jv_unref(val);
        return st;
    }
    d->keys[d->n] = key;
    d->vals[d->n++] = val;
    return FK_OK;
}

fk_status jv_namespace(jrt *rt, jv *out)
{
    jns *ns = jrt_alloc(rt, sizeof *ns);
    if (!ns)
        return failed(rt);
    jv attrs;
    fk_status st = jv_dict(rt, 0, &attrs);
    if (st) {
        free(ns);
        return st;
    }
    *ns = (jns){.attrs = attrs.u.d, .next = rt->namespaces};
    rt->namespaces = ns;
    *out = (jv){.type = JV_NS, .u.ns = ns};
    return FK_OK;
}

fk_status jv_func(jrt *rt, jfunc_kind kind, int id, jv *out)
{
    jfunc *fn = jrt_alloc(rt, sizeof *fn);
    if (!fn)
        return failed(rt);
    *fn = (jfunc){.refs = 1, .kind = kind, .id = id};
    *out = (jv){.type = JV_FUNC, .u.fn = fn};
    return FK_OK;
}

/* ---- Python semantics ---- */

bool jv_truthy(jv v)
{
    switch (v.type) {
    case JV_UNDEFINED:
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s->len > 0;
    case JV_LIST: return v.u.l->n > 0;
    case JV_DICT: return v.u.d->n > 0;
    default: return true;
    }
}

/* Exact comparison of an integer and a double (Python compares them without rounding): -1, 0, 1, or 2 when
 * f is NaN. */
static int cmp_int_float(int64_t i, double f)
{
    if (isnan(f))
        return 2;
    if (f >= 9223372036854775808.0)
        return -1;
    if (f < -9223372036854775808.0)
        return 1;
    double t = trunc(f);
    int64_t fi = (int64_t)t;
    if (i != fi)
        return i < fi ? -1 : 1;
    return t == f ? 0 : (f > t ? -1 : 1);
}

/* -1, 0, 1, or 2 (unordered: NaN) for two numbers. */
static int cmp_numbers(jv a, jv b)
{
    if (a.type == JV_BOOL)
        a = jv_int(a.u.b);
    if (b.type == JV_BOOL)
        b = jv_int(b.u.b);
    if (a.type == JV_INT && b.type == JV_INT)
        return (a.u.i > b.u.i) - (a.u.i < b.u.i);
    if (a.type == JV_INT)
        return cmp_int_float(a.u.i, b.u.f);
    if (b.type == JV_INT) {
        int c = cmp_int_float(b.u.i, a.u.f);
        return c == 2 ? 2 : -c;
    }
    if (isnan(a.u.f) || isnan(b.u.f))
        return 2;
    return (a.u.f > b.u.f) - (a.u.f < b.u.f);
}

fk_status jv_eq(jrt *rt, jv a, jv b, bool *out)
{
    fk_status st = jrt_charge(rt, 1);
    if (st)
        return st;
    *out = false;
    if (jv_is_number(a) && jv_is_number(b)) {
        *out = cmp_numbers(a, b) == 0;
        return FK_OK;
    }
    if (a.type != b.type)
        return FK_OK;
    switch (a.type) {
    case JV_UNDEFINED:
    case JV_NONE: *out = true; break;
    case JV_STR: *out = a.u.s->len == b.u.s->len && memcmp(a.u.s->data, b.u.s->data, a.u.s->len) == 0; break;
    case JV_LIST:
        if (a.u.l->tuple != b.u.l->tuple || a.u.l->n != b.u.l->n)
            break;
        *out = true;
        for (size_t i = 0; i < a.u.l->n && *out; i++)
            if ((st = jv_eq(rt, a.u.l->items[i], b.u.l->items[i], out)))
                return st;
        break;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n)
            break;
        *out = true;
        for (size_t i = 0; i < a.u.d->n && *out; i++) {
            const jv *v;
            if ((st = jv_dict_find(rt, b.u.d, a.u.d->keys[i], &v)))
                return st;
            if (!v)
                *out = false;
            else if ((st = jv_eq(rt, a.u.d->vals[i], *v, out)))
                return st;
        }
        break;
    case JV_NS: *out = a.u.ns == b.u.ns; break;
    case JV_FUNC: *out = a.u.fn == b.u.fn; break;
    case JV_LOOP: *out = a.u.loop == b.u.loop; break;
    default: break;
    }
    return FK_OK;
}

fk_status jv_cmp(jrt *rt, jv a, jv b, int *out)
{
    fk_status st = jrt_charge(rt, 1);
    if (st)
        return st;
    if (jv_is_number(a) && jv_is_number(b)) {
        *out = cmp_numbers(a, b);
        return FK_OK;
    }
    if (a.type == JV_STR && b.type == JV_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->data, b.u.s->data, n);
        *out = c ? (c > 0) - (c < 0) : (a.u.s->len > b.u.s->len) - (a.u.s->len < b.u.s->len);
        return FK_OK;
    }
    if (a.type == JV_LIST && b.type == JV_LIST && a.u.l->tuple == b.u.l->tuple) {
        /* Python: the first items that differ decide, else the lengths. */
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            bool eq;
            if ((st = jv_eq(rt, a.u.l->items[i], b.u.l->items[i], &eq)))
                return st;
            if (!eq)
                return jv_cmp(rt, a.u.l->items[i], b.u.l->items[i], out);
        }
        *out = (a.u.l->n > b.u.l->n) - (a.u.l->n < b.u.l->n);
        return FK_OK;
    }
    if (a.type == JV_UNDEFINED || b.type == JV_UNDEFINED) {
        jv u = a.type == JV_UNDEFINED ? a : b;
        return jrt_fail(rt, "%s", u.u.s ? u.u.s->data : "undefined value compared");
    }
    return jrt_fail(rt, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

const char *jv_type_name(jv v)
{
    switch (v.type) {
    case JV_UNDEFINED: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v.u.l->tuple ? "tuple" : "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_FUNC: return v.u.fn->kind == JF_MACRO ? "Macro" : "builtin_function_or_method";
    case JV_LOOP: return "LoopContext";
    }
    return "object";
}

const char *jv_object_name(jv v)
{
    switch (v.type) {
    case JV_NONE: return "None";
    case JV_BOOL: return "bool object";
    case JV_INT: return "int object";
    case JV_FLOAT: return "float object";
    case JV_STR: return "str object";
    case JV_LIST: return v.u.l->tuple ? "tuple object" : "list object";
    case JV_DICT: return "dict object";
    case JV_NS: return "Namespace object";
    case JV_FUNC: return v.u.fn->kind == JF_MACRO ? "jinja2.runtime.Macro object" : "builtin_function_or_method object";
    case JV_LOOP: return "jinja2.runtime.LoopContext object";
    default: return "jinja2.runtime.Undefined object";
    }
}

/* ---- from JSON ---- */

/* Number lexemes of a JSON text in document order: whether each is an integer (no fraction, no exponent). */
typedef struct json_numbers {
    const char *text;
    size_t len, pos;
} json_numbers;

/* The next number lexeme at or after the scanner's position (outside strings). */
static bool next_number(json_numbers *nums, const char **start, size_t *n)
{
    const char *t = nums->text;
    size_t i = nums->pos;
    while (i < nums->len) {
        char c = t[i];
        if (c == '"') {
            for (i++; i < nums->len && t[i] != '"'; i++)
                if (t[i] == '\\')
                    i++;
            i++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i;
            while (j < nums->len && strchr("0123456789+-.eE", t[j]))
                j++;
            *start = t + i;
            *n = j - i;
            nums->pos = j;
            return true;
        } else {
            i++;
        }
    }
    nums->pos = i;
    return false;
}

static fk_status convert(jrt *rt, const cJSON *c, json_numbers *nums, const char *what, jv *out)
{
    fk_status st = FK_OK;
    if (cJSON_IsNull(c)) {
        *out = jv_none();
    } else if (cJSON_IsBool(c)) {
        *out = jv_bool(cJSON_IsTrue(c));
    } else if (cJSON_IsNumber(c)) {
        const char *lex;
        size_t n;
        char buf[64];
        if (!next_number(nums, &lex, &n) || n >= sizeof buf)
            return fk_error_set(rt->err, FK_ERR_INVALID_ARGUMENT, "%s: number too long", what);
        memcpy(buf, lex, n);
        buf[n] = '\0';
        if (strpbrk(buf, ".eE")) {
            *out = jv_float(strtod(buf, NULL));
        } else {
            errno = 0;
            long long v = strtoll(buf, NULL, 10);
            if (errno)
                return fk_error_set(rt->err, FK_ERR_INVALID_ARGUMENT, "%s: integer %s is out of range", what, buf);
            *out = jv_int(v);
        }
    } else if (cJSON_IsString(c)) {
        st = jv_str(rt, c->valuestring, strlen(c->valuestring), out);
    } else if (cJSON_IsArray(c)) {
        st = jv_list(rt, (size_t)cJSON_GetArraySize(c), false, out);
        for (const cJSON *e = c->child; e && !st; e = e->next) {
            jv item;
            st = convert(rt, e, nums, what, &item);
            if (!st)
                st = jv_list_push(rt, out->u.l, item);
        }
        if (st && out->type == JV_LIST)
            jv_clear(out);
    } else {
        st = jv_dict(rt, (size_t)cJSON_GetArraySize(c), out);
        for (const cJSON *e = c->child; e && !st; e = e->next) {
            jv key, val;
            st = jv_str(rt, e->string, strlen(e->string), &key);
            if (st)
                break;
            st = convert(rt, e, nums, what, &val);
            if (st) {
                jv_unref(key);
                break;
            }
            st = jv_dict_set(rt, out->u.d, key, val);
        }
        if (st && out->type == JV_DICT)
            jv_clear(out);
    }
    return st;
}

/* True when a string of the JSON text holds the escape \u0000 (cJSON would cut the string there). */
static bool has_nul_escape(const char *t, size_t len)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == '"')
            in_string = !in_string;
        else if (in_string && t[i] == '\\') {
            if (i + 5 < len && memcmp(t + i + 1, "u0000", 5) == 0)
                return true;
            i++;
        }
    }
    return false;
}

fk_status jv_from_json(jrt *rt, const char *text, size_t len, const char *what, jv *out)
{
    size_t bad = utf8_check(text, len);
    if (bad < len)
        return fk_error_set(rt->err, FK_ERR_INVALID_ARGUMENT, "%s is not valid UTF-8 at byte %zu", what, bad);
    if (memchr(text, 0, len) || has_nul_escape(text, len))
        return fk_error_set(rt->err, FK_ERR_INVALID_ARGUMENT, "%s: NUL character not allowed", what);
    cJSON *root;
    fk_status st = json_parse(text, len, what, &root, rt->err);
    if (st) {
        rt->err->status = FK_ERR_INVALID_ARGUMENT;
        return FK_ERR_INVALID_ARGUMENT;
    }
    json_numbers nums = {.text = text, .len = len};
    st = convert(rt, root, &nums, what, out);
    cJSON_Delete(root);
    return st;
}
