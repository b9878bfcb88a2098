/* jinja_method.c — methods of strings, dicts, lists and `loop`, and the globals of a chat template (see
 * jinja_method.h). Arguments follow Python's signatures; wrong types are Python's TypeErrors. */
#include "jinja_method.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "error.h"
#include "jinja_format.h"
#include "jinja_ops.h"
#include "jinja_str.h"

fk_status jargs_bind(jrt *rt, const char *fname, const jargs *args, const char *const *params, size_t n_params,
                     size_t n_required, jv *slots, unsigned *given)
{
    *given = 0;
    if (args->n_pos > n_params)
        return jrt_fail(rt, "%s() takes at most %zu argument%s (%zu given)", fname, n_params, n_params == 1 ? "" : "s",
                        args->n_pos);
    for (size_t i = 0; i < args->n_pos; i++) {
        slots[i] = args->pos[i];
        *given |= 1u << i;
    }
    for (size_t k = 0; k < args->n_kw; k++) {
        size_t i = 0;
        while (i < n_params && strcmp(params[i], args->kw_names[k]) != 0)
            i++;
        if (i == n_params)
            return jrt_fail(rt, "%s() got an unexpected keyword argument '%s'", fname, args->kw_names[k]);
        if (*given & (1u << i))
            return jrt_fail(rt, "%s() got multiple values for argument '%s'", fname, params[i]);
        slots[i] = args->kw[k];
        *given |= 1u << i;
    }
    for (size_t i = 0; i < n_required; i++)
        if (!(*given & (1u << i)))
            return jrt_fail(rt, "%s() missing required argument '%s'", fname, params[i]);
    return FK_OK;
}

/* ---- the method table ---- */

enum { O_STR = 1, O_DICT = 2, O_LIST = 4, O_TUPLE = 8, O_LOOP = 16 };

typedef enum method_id {
    M_STRIP, M_LSTRIP, M_RSTRIP, M_SPLIT, M_RSPLIT, M_SPLITLINES, M_STARTSWITH, M_ENDSWITH, M_REPLACE, M_UPPER,
    M_LOWER, M_TITLE, M_CAPITALIZE, M_FIND, M_RFIND, M_STR_COUNT, M_STR_INDEX, M_JOIN, M_REMOVEPREFIX,
    M_REMOVESUFFIX, M_ITEMS, M_KEYS, M_VALUES, M_GET, M_COPY, M_COUNT, M_INDEX, M_CYCLE, M_CHANGED,
    M_UNSAFE,      /* mutating methods the immutable sandbox forbids */
    M_UNSUPPORTED, /* Python's but not implemented here */
} method_id;

static const struct {
    const char *name;
    unsigned owners;
    method_id id;
} methods[] = {
    {"strip", O_STR, M_STRIP},
    {"lstrip", O_STR, M_LSTRIP},
    {"rstrip", O_STR, M_RSTRIP},
    {"split", O_STR, M_SPLIT},
    {"rsplit", O_STR, M_RSPLIT},
    {"splitlines", O_STR, M_SPLITLINES},
    {"startswith", O_STR, M_STARTSWITH},
    {"endswith", O_STR, M_ENDSWITH},
    {"replace", O_STR, M_REPLACE},
    {"upper", O_STR, M_UPPER},
    {"lower", O_STR, M_LOWER},
    {"title", O_STR, M_TITLE},
    {"capitalize", O_STR, M_CAPITALIZE},
    {"find", O_STR, M_FIND},
    {"rfind", O_STR, M_RFIND},
    {"count", O_STR, M_STR_COUNT},
    {"index", O_STR, M_STR_INDEX},
    {"join", O_STR, M_JOIN},
    {"removeprefix", O_STR, M_REMOVEPREFIX},
    {"removesuffix", O_STR, M_REMOVESUFFIX},
    {"items", O_DICT, M_ITEMS},
    {"keys", O_DICT, M_KEYS},
    {"values", O_DICT, M_VALUES},
    {"get", O_DICT, M_GET},
    {"copy", O_DICT | O_LIST, M_COPY},
    {"count", O_LIST | O_TUPLE, M_COUNT},
    {"index", O_LIST | O_TUPLE, M_INDEX},
    {"cycle", O_LOOP, M_CYCLE},
    {"changed", O_LOOP, M_CHANGED},
    {"clear", O_DICT | O_LIST, M_UNSAFE},
    {"pop", O_DICT | O_LIST, M_UNSAFE},
    {"popitem", O_DICT, M_UNSAFE},
    {"setdefault", O_DICT, M_UNSAFE},
    {"update", O_DICT, M_UNSAFE},
    {"append", O_LIST, M_UNSAFE},
    {"extend", O_LIST, M_UNSAFE},
    {"insert", O_LIST, M_UNSAFE},
    {"remove", O_LIST, M_UNSAFE},
    {"reverse", O_LIST, M_UNSAFE},
    {"sort", O_LIST, M_UNSAFE},
    {"casefold", O_STR, M_UNSUPPORTED},
    {"center", O_STR, M_UNSUPPORTED},
    {"encode", O_STR, M_UNSUPPORTED},
    {"expandtabs", O_STR, M_UNSUPPORTED},
    {"format", O_STR, M_UNSUPPORTED},
    {"format_map", O_STR, M_UNSUPPORTED},
    {"isalnum", O_STR, M_UNSUPPORTED},
    {"isalpha", O_STR, M_UNSUPPORTED},
    {"isascii", O_STR, M_UNSUPPORTED},
    {"isdecimal", O_STR, M_UNSUPPORTED},
    {"isdigit", O_STR, M_UNSUPPORTED},
    {"isidentifier", O_STR, M_UNSUPPORTED},
    {"islower", O_STR, M_UNSUPPORTED},
    {"isnumeric", O_STR, M_UNSUPPORTED},
    {"isprintable", O_STR, M_UNSUPPORTED},
    {"isspace", O_STR, M_UNSUPPORTED},
    {"istitle", O_STR, M_UNSUPPORTED},
    {"isupper", O_STR, M_UNSUPPORTED},
    {"ljust", O_STR, M_UNSUPPORTED},
    {"partition", O_STR, M_UNSUPPORTED},
    {"rindex", O_STR, M_UNSUPPORTED},
    {"rjust", O_STR, M_UNSUPPORTED},
    {"rpartition", O_STR, M_UNSUPPORTED},
    {"swapcase", O_STR, M_UNSUPPORTED},
    {"translate", O_STR, M_UNSUPPORTED},
    {"zfill", O_STR, M_UNSUPPORTED},
    {"fromkeys", O_DICT, M_UNSUPPORTED},
};

enum { N_METHODS = sizeof methods / sizeof methods[0] };

static unsigned owner_of(jv obj)
{
    switch (obj.type) {
    case JV_STR: return O_STR;
    case JV_DICT: return O_DICT;
    case JV_LIST: return obj.u.l->tuple ? O_TUPLE : O_LIST;
    case JV_LOOP: return O_LOOP;
    default: return 0;
    }
}

int jinja_method_find(jv obj, const char *name, bool *unsafe)
{
    *unsafe = false;
    unsigned owner = owner_of(obj);
    for (int i = 0; i < N_METHODS; i++)
        if ((methods[i].owners & owner) && !strcmp(methods[i].name, name)) {
            *unsafe = methods[i].id == M_UNSAFE;
            return *unsafe ? -1 : i;
        }
    return -1;
}

const char *jinja_method_name(int id)
{
    return methods[id].name;
}

/* ---- argument helpers ---- */

static fk_status want_str(jrt *rt, const char *fname, jv v, const jstr **out)
{
    if (v.type == JV_STR) {
        *out = v.u.s;
        return FK_OK;
    }
    if (v.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, v);
    return jrt_fail(rt, "%s() argument must be str, not %s", fname, jv_type_name(v));
}

static fk_status want_int(jrt *rt, const char *fname, jv v, int64_t *out)
{
    if (v.type == JV_INT || v.type == JV_BOOL) {
        *out = v.type == JV_BOOL ? v.u.b : v.u.i;
        return FK_OK;
    }
    if (v.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, v);
    return jrt_fail(rt, "%s(): '%s' object cannot be interpreted as an integer", fname, jv_type_name(v));
}

/* An optional str argument: NULL when None or not given. */
static fk_status opt_str(jrt *rt, const char *fname, jv v, bool given, const jstr **out)
{
    *out = NULL;
    return !given || v.type == JV_NONE ? FK_OK : want_str(rt, fname, v, out);
}

static fk_status substring(jrt *rt, const jstr *s, size_t from, size_t to, jv *out)
{
    return jv_str(rt, s->data + from, to - from, out);
}

/* str.startswith / endswith: prefix a str or a tuple of them; optional start and end in code points. */
static fk_status affix(jrt *rt, bool ends, const jstr *s, const jargs *a, jv *out)
{
    static const char *const params[] = {"prefix", "start", "end"};
    const char *fname = ends ? "endswith" : "startswith";
    jv v[3] = {0};
    unsigned given;
    fk_status st = jargs_bind(rt, fname, a, params, 3, 1, v, &given);
    if (st)
        return st;
    int64_t n = (int64_t)s->ncp, range[2] = {0, n};
    for (int k = 0; k < 2; k++) {
        if (!(given & (2u << k)) || v[k + 1].type == JV_NONE)
            continue;
        if ((st = want_int(rt, fname, v[k + 1], &range[k])))
            return st;
        if (range[k] < 0)
            range[k] = range[k] + n < 0 ? 0 : range[k] + n;
        if (range[k] > n)
            range[k] = n;
    }
    size_t from = pystr_offset(s->data, s->len, (size_t)range[0]);
    size_t to = range[1] < range[0] ? from : pystr_offset(s->data, s->len, (size_t)range[1]);
    bool tuple = v[0].type == JV_LIST && v[0].u.l->tuple;
    size_t count = tuple ? v[0].u.l->n : 1;
    *out = jv_bool(false);
    for (size_t i = 0; i < count; i++) {
        jv x = tuple ? v[0].u.l->items[i] : v[0];
        if (x.type != JV_STR)
            return jrt_fail(rt, "%s first arg must be str or a tuple of str, not %s", fname, jv_type_name(x));
        size_t k = x.u.s->len;
        if (range[1] < range[0] || k > to - from)
            continue;
        if (memcmp(s->data + (ends ? to - k : from), x.u.s->data, k) == 0) {
            *out = jv_bool(true);
            break;
        }
    }
    return FK_OK;
}

/* sep.join(items): every item must be a string. */
static fk_status join(jrt *rt, const jstr *sep, jv iterable, jv *out)
{
    jv items;
    fk_status st = jv_iter(rt, iterable, &items);
    if (st)
        return st;
    jbuf b = {.max = SIZE_MAX};
    for (size_t i = 0; i < items.u.l->n && !st; i++) {
        jv x = items.u.l->items[i];
        if (x.type != JV_STR) {
            st = jrt_fail(rt, "sequence item %zu: expected str instance, %s found", i, jv_type_name(x));
            break;
        }
        if (i)
            st = jbuf_put(rt, &b, sep->data, sep->len);
        if (!st)
            st = jbuf_put(rt, &b, x.u.s->data, x.u.s->len);
    }
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    jv_unref(items);
    return st;
}

static fk_status pairs(jrt *rt, const jdict *d, int which, jv *out)
{
    fk_status st = jv_list(rt, d->n, false, out);
    for (size_t i = 0; i < d->n && !st; i++) {
        jv item;
        if (which == 0) {
            if (!(st = jv_list(rt, 2, true, &item))) {
                st = jv_list_push(rt, item.u.l, jv_ref(d->keys[i]));
                if (!st)
                    st = jv_list_push(rt, item.u.l, jv_ref(d->vals[i]));
                if (st)
                    jv_unref(item);
            }
        } else {
            item = jv_ref(which == 1 ? d->keys[i] : d->vals[i]);
        }
        if (!st)
            st = jv_list_push(rt, out->u.l, item);
    }
    if (st && out->type == JV_LIST)
        jv_clear(out);
    return st;
}

static fk_status no_args(jrt *rt, const char *fname, const jargs *a)
{
    if (a->n_pos || a->n_kw)
        return jrt_fail(rt, "%s() takes no arguments", fname);
    return FK_OK;
}

static fk_status str_method(jrt *rt, method_id id, const char *fname, const jstr *s, const jargs *a, jv *out)
{
    static const char *const p_chars[] = {"chars"}, *const p_split[] = {"sep", "maxsplit"};
    static const char *const p_keep[] = {"keepends"}, *const p_replace[] = {"old", "new", "count"};
    static const char *const p_sub[] = {"sub"}, *const p_iter[] = {"iterable"}, *const p_affix[] = {"affix"};
    jv v[3] = {0};
    unsigned given = 0;
    fk_status st = FK_OK;
    const jstr *x = NULL, *y = NULL;
    int64_t n = -1;
    switch (id) {
    case M_STRIP:
    case M_LSTRIP:
    case M_RSTRIP: {
        if ((st = jargs_bind(rt, fname, a, p_chars, 1, 0, v, &given)) || (st = opt_str(rt, fname, v[0], given, &x)))
            return st;
        size_t from, to;
        pystr_strip(s->data, s->len, x, id == M_STRIP ? PYSTR_BOTH : id == M_LSTRIP ? PYSTR_LEFT : PYSTR_RIGHT,
                    &from, &to);
        return substring(rt, s, from, to, out);
    }
    case M_SPLIT:
    case M_RSPLIT:
        if ((st = jargs_bind(rt, fname, a, p_split, 2, 0, v, &given)) || (st = opt_str(rt, fname, v[0], given & 1, &x)))
            return st;
        if ((given & 2) && (st = want_int(rt, fname, v[1], &n)))
            return st;
        return pystr_split(rt, s, x, n, id == M_RSPLIT, out);
    case M_SPLITLINES:
        if ((st = jargs_bind(rt, fname, a, p_keep, 1, 0, v, &given)))
            return st;
        return pystr_splitlines(rt, s, (given & 1) && jv_truthy(v[0]), out);
    case M_STARTSWITH:
    case M_ENDSWITH: return affix(rt, id == M_ENDSWITH, s, a, out);
    case M_REPLACE:
        if ((st = jargs_bind(rt, fname, a, p_replace, 3, 2, v, &given)) || (st = want_str(rt, fname, v[0], &x)) ||
            (st = want_str(rt, fname, v[1], &y)))
            return st;
        if ((given & 4) && (st = want_int(rt, fname, v[2], &n)))
            return st;
        return pystr_replace(rt, s, x, y, n, out);
    case M_UPPER:
    case M_LOWER:
    case M_TITLE:
    case M_CAPITALIZE:
        if ((st = no_args(rt, fname, a)))
            return st;
        return pystr_case_map(rt, s,
                              id == M_UPPER   ? PYSTR_UPPER
                              : id == M_LOWER ? PYSTR_LOWER
                              : id == M_TITLE ? PYSTR_TITLE
                                              : PYSTR_CAPITALIZE,
                              out);
    case M_FIND:
    case M_RFIND:
    case M_STR_INDEX:
    case M_STR_COUNT:
        if ((st = jargs_bind(rt, fname, a, p_sub, 1, 1, v, &given)) || (st = want_str(rt, fname, v[0], &x)))
            return st;
        n = id == M_STR_COUNT ? pystr_count(rt, s, x) : pystr_find(rt, s, x, id == M_RFIND);
        if (n == -2)
            return rt->err->status;
        if (id == M_STR_INDEX && n < 0)
            return jrt_fail(rt, "substring not found");
        *out = jv_int(n);
        return FK_OK;
    case M_JOIN:
        if ((st = jargs_bind(rt, fname, a, p_iter, 1, 1, v, &given)))
            return st;
        return join(rt, s, v[0], out);
    case M_REMOVEPREFIX:
    case M_REMOVESUFFIX: {
        if ((st = jargs_bind(rt, fname, a, p_affix, 1, 1, v, &given)) || (st = want_str(rt, fname, v[0], &x)))
            return st;
        bool pre = id == M_REMOVEPREFIX;
        bool has = x->len <= s->len && memcmp(s->data + (pre ? 0 : s->len - x->len), x->data, x->len) == 0;
        return has ? substring(rt, s, pre ? x->len : 0, pre ? s->len : s->len - x->len, out)
                   : (*out = jv_ref((jv){.type = JV_STR, .u.s = (jstr *)s}), FK_OK);
    }
    default: return jrt_fail(rt, "str.%s() is not supported", fname);
    }
}

static fk_status container_method(jrt *rt, method_id id, const char *fname, jv self, const jargs *a, jv *out)
{
    static const char *const p_get[] = {"key", "default"}, *const p_value[] = {"value"};
    jv v[2] = {jv_none(), jv_none()};
    unsigned given;
    fk_status st;
    switch (id) {
    case M_ITEMS:
    case M_KEYS:
    case M_VALUES:
        if ((st = no_args(rt, fname, a)))
            return st;
        return pairs(rt, self.u.d, id == M_ITEMS ? 0 : id == M_KEYS ? 1 : 2, out);
    case M_GET: {
        if ((st = jargs_bind(rt, fname, a, p_get, 2, 1, v, &given)))
            return st;
        if (v[0].type == JV_LIST && !v[0].u.l->tuple)
            return jrt_fail(rt, "unhashable type: 'list'");
        if (v[0].type == JV_DICT)
            return jrt_fail(rt, "unhashable type: 'dict'");
        const jv *found;
        if ((st = jv_dict_find(rt, self.u.d, v[0], &found)))
            return st;
        *out = jv_ref(found ? *found : v[1]);
        return FK_OK;
    }
    case M_COPY:
        if ((st = no_args(rt, fname, a)))
            return st;
        if (self.type == JV_LIST) {
            if ((st = jv_list(rt, self.u.l->n, false, out)))
                return st;
            for (size_t i = 0; i < self.u.l->n && !st; i++)
                st = jv_list_push(rt, out->u.l, jv_ref(self.u.l->items[i]));
        } else {
            if ((st = jv_dict(rt, self.u.d->n, out)))
                return st;
            for (size_t i = 0; i < self.u.d->n && !st; i++)
                st = jv_dict_set(rt, out->u.d, jv_ref(self.u.d->keys[i]), jv_ref(self.u.d->vals[i]));
        }
        if (st)
            jv_clear(out);
        return st;
    case M_COUNT:
    case M_INDEX: {
        if ((st = jargs_bind(rt, fname, a, p_value, 1, 1, v, &given)))
            return st;
        int64_t count = 0;
        for (size_t i = 0; i < self.u.l->n; i++) {
            bool eq;
            if ((st = jv_eq(rt, self.u.l->items[i], v[0], &eq)))
                return st;
            if (eq && id == M_INDEX) {
                *out = jv_int((int64_t)i);
                return FK_OK;
            }
            count += eq;
        }
        if (id == M_INDEX)
            return jrt_fail(rt, "%s.index(x): x not in %s", jv_type_name(self), jv_type_name(self));
        *out = jv_int(count);
        return FK_OK;
    }
    default: return jrt_fail(rt, "%s.%s() is not supported", jv_type_name(self), fname);
    }
}

static fk_status loop_method(jrt *rt, method_id id, jloop *loop, const jargs *a, jv *out)
{
    if (a->n_kw)
        return jrt_fail(rt, "loop.%s() takes no keyword arguments", id == M_CYCLE ? "cycle" : "changed");
    if (id == M_CYCLE) {
        if (a->n_pos == 0)
            return jrt_fail(rt, "no items for cycling given");
        *out = jv_ref(a->pos[loop->index0 % a->n_pos]);
        return FK_OK;
    }
    /* loop.changed(*values): true when the values differ from the last call's. */
    jv now;
    fk_status st = jv_list(rt, a->n_pos, false, &now);
    for (size_t i = 0; i < a->n_pos && !st; i++)
        st = jv_list_push(rt, now.u.l, jv_ref(a->pos[i]));
    if (st)
        return st;
    bool same = false;
    if (loop->changed_set && (st = jv_eq(rt, loop->changed, now, &same))) {
        jv_unref(now);
        return st;
    }
    if (loop->changed_set)
        jv_unref(loop->changed);
    loop->changed = now;
    loop->changed_set = true;
    *out = jv_bool(!same);
    return FK_OK;
}

fk_status jinja_method_call(jrt *rt, int id, jv self, const jargs *args, jv *out)
{
    method_id m = methods[id].id;
    const char *name = methods[id].name;
    if (m == M_UNSUPPORTED)
        return jrt_fail(rt, "%s.%s() is not supported", jv_type_name(self), name);
    if (self.type == JV_STR)
        return str_method(rt, m, name, self.u.s, args, out);
    if (self.type == JV_LOOP)
        return loop_method(rt, m, self.u.loop, args, out);
    return container_method(rt, m, name, self, args, out);
}

/* ---- globals ---- */

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE_EXCEPTION, G_STRFTIME_NOW, N_GLOBALS };

static const char *const global_names[N_GLOBALS] = {"range", "namespace", "dict", "raise_exception",
                                                    "strftime_now"};

int jinja_global_find(const char *name)
{
    for (int i = 0; i < N_GLOBALS; i++)
        if (!strcmp(global_names[i], name))
            return i;
    return -1;
}

const char *jinja_global_name(int id)
{
    return global_names[id];
}

/* jinja2's sandbox refuses ranges of more than MAX_RANGE items. */
enum { MAX_RANGE = 100000 };

static fk_status range(jrt *rt, const jargs *a, jv *out)
{
    if (a->n_kw)
        return jrt_fail(rt, "range() takes no keyword arguments");
    if (a->n_pos < 1 || a->n_pos > 3)
        return jrt_fail(rt, "range expected at most 3 arguments, got %zu", a->n_pos);
    int64_t v[3] = {0, 0, 1};
    for (size_t i = 0; i < a->n_pos; i++) {
        fk_status st = want_int(rt, "range", a->pos[i], &v[a->n_pos == 1 ? 1 : i]);
        if (st)
            return st;
    }
    if (v[2] == 0)
        return jrt_fail(rt, "range() arg 3 must not be zero");
    __int128 span = (__int128)v[1] - v[0];
    __int128 n = v[2] > 0 ? (span > 0 ? (span - 1) / v[2] + 1 : 0) : (span < 0 ? (-span - 1) / -v[2] + 1 : 0);
    if (n > MAX_RANGE)
        return jrt_fail(rt, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", MAX_RANGE);
    fk_status st = jv_list(rt, (size_t)n, false, out);
    for (int64_t i = 0; i < (int64_t)n && !st; i++)
        st = jv_list_push(rt, out->u.l, jv_int(v[0] + i * v[2]));
    if (st && out->type == JV_LIST)
        jv_clear(out);
    return st;
}

/* Python's dict(mapping_or_pairs, **kwargs) into d; namespace: keys must be strings without a leading "_". */
static fk_status fill_dict(jrt *rt, const char *fname, jdict *d, const jargs *a, bool namespace)
{
    if (a->n_pos > 1)
        return jrt_fail(rt, "%s expected at most 1 argument, got %zu", fname, a->n_pos);
    fk_status st = FK_OK;
    jv pairs_list = jv_none();
    if (a->n_pos == 1) {
        jv src = a->pos[0];
        if (src.type == JV_DICT) {
            for (size_t i = 0; i < src.u.d->n && !st; i++)
                st = jv_dict_set(rt, d, jv_ref(src.u.d->keys[i]), jv_ref(src.u.d->vals[i]));
        } else if (!(st = jv_iter(rt, src, &pairs_list))) {
            for (size_t i = 0; i < pairs_list.u.l->n && !st; i++) {
                jv p = pairs_list.u.l->items[i];
                if (p.type != JV_LIST || p.u.l->n != 2)
                    st = jrt_fail(rt, "dictionary update sequence element #%zu has the wrong length", i);
                else
                    st = jv_dict_set(rt, d, jv_ref(p.u.l->items[0]), jv_ref(p.u.l->items[1]));
            }
            jv_unref(pairs_list);
        }
    }
    for (size_t k = 0; k < a->n_kw && !st; k++) {
        jv key;
        if (!(st = jv_str(rt, a->kw_names[k], strlen(a->kw_names[k]), &key)))
            st = jv_dict_set(rt, d, key, jv_ref(a->kw[k]));
    }
    for (size_t i = 0; namespace && i < d->n && !st; i++)
        if (d->keys[i].type == JV_STR && d->keys[i].u.s->data[0] == '_')
            st = jrt_fail(rt,
                          "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '%s'. "
                          "Please rename the attribute.",
                          d->keys[i].u.s->data);
    return st;
}

/* Python's datetime.strftime on a naive local time: %f is the microseconds, %z and %Z are empty, the rest is the C
 * library's strftime (C locale). */
static fk_status strftime_now(jrt *rt, const jargs *a, jv *out)
{
    static const char *const params[] = {"format"};
    jv v[1];
    unsigned given;
    const jstr *fmt = NULL;
    fk_status st = jargs_bind(rt, "strftime_now", a, params, 1, 1, v, &given);
    if (st || (st = want_str(rt, "strftime_now", v[0], &fmt)))
        return st;
    time_t secs;
    long usec = 0;
    if (rt->fixed_now) {
        secs = (time_t)rt->now;
    } else {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        secs = tv.tv_sec;
        usec = (long)tv.tv_usec;
    }
    struct tm tm;
    if (!localtime_r(&secs, &tm))
        return jrt_fail(rt, "strftime_now: the time is out of range");
    jbuf pattern = {.max = SIZE_MAX}, text = {.max = SIZE_MAX};
    for (size_t i = 0; i < fmt->len && !st; i++) {
        char c = fmt->data[i], d = i + 1 < fmt->len ? fmt->data[i + 1] : 0;
        if (c == '%' && d == 'f') {
            st = jbuf_printf(rt, &pattern, "%06ld", usec);
            i++;
        } else if (c == '%' && (d == 'z' || d == 'Z')) {
            i++;
        } else if (c == '%' && d) {
            st = jbuf_put(rt, &pattern, fmt->data + i, 2);
            i++;
        } else {
            st = jbuf_putc(rt, &pattern, c);
        }
    }
    /* Each directive expands to at most a few dozen bytes. */
    size_t cap = 64 + 64 * (pattern.len + 1);
    char *buf = st ? NULL : jrt_alloc(rt, cap);
    if (buf) {
        size_t n = pattern.len ? strftime(buf, cap, pattern.data, &tm) : 0;
        st = jbuf_put(rt, &text, buf, n);
        free(buf);
        if (!st)
            st = jbuf_to_str(rt, &text, out);
    } else if (!st) {
        st = rt->err->status;
    }
    jbuf_free(&pattern);
    jbuf_free(&text);
    return st;
}

fk_status jinja_global_call(jrt *rt, int id, const jargs *args, jv *out)
{
    fk_status st;
    switch (id) {
    case G_RANGE: return range(rt, args, out);
    case G_NAMESPACE:
        if ((st = jv_namespace(rt, out)))
            return st;
        return fill_dict(rt, "namespace", out->u.ns->attrs, args, true);
    case G_DICT:
        if ((st = jv_dict(rt, 0, out)))
            return st;
        if ((st = fill_dict(rt, "dict", out->u.d, args, false)))
            jv_clear(out);
        return st;
    case G_RAISE_EXCEPTION: {
        static const char *const params[] = {"message"};
        jv v[1];
        unsigned given;
        if ((st = jargs_bind(rt, "raise_exception", args, params, 1, 1, v, &given)))
            return st;
        jv msg;
        if ((st = jv_to_str(rt, v[0], &msg)))
            return st;
        fk_error_set(rt->err, FK_ERR_INVALID_ARGUMENT, "TemplateError: %s", msg.u.s->data);
        jv_unref(msg);
        return FK_ERR_INVALID_ARGUMENT;
    }
    case G_STRFTIME_NOW: return strftime_now(rt, args, out);
    }
    return jrt_fail(rt, "unknown function");
}
