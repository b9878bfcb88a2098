/* jinja_ops.c — Python's operators, len, in and iteration on the interpreter's values, and jinja2's sandboxed
 * getattr/getitem (see jinja_ops.h). Python's exception messages are kept, prefixed with the template line. */
#include "jinja_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_format.h"
#include "jinja_method.h"
#include "jinja_str.h"

fk_status jv_fail_undefined(jrt *rt, jv u)
{
    return jrt_fail(rt, "%s", u.u.s ? u.u.s->data : "an undefined value was used");
}

static fk_status fail_type(jrt *rt, const char *fmt, jv a, jv b)
{
    if (a.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, a);
    if (b.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, b);
    return jrt_fail(rt, fmt, jv_type_name(a), jv_type_name(b));
}

/* ---- attribute and item access ---- */

static fk_status bound_method(jrt *rt, jv obj, int id, jv *out)
{
    fk_status st = jv_func(rt, JF_METHOD, id, out);
    if (!st) {
        out->u.fn->self = jv_ref(obj);
        out->u.fn->name = jinja_method_name(id);
    }
    return st;
}

/* obj's Python attribute `name` (a method, or a namespace's or loop's attribute); *found false when it has none. */
static fk_status python_attribute(jrt *rt, jv obj, const char *name, jv *out, bool *found)
{
    *found = true;
    if (name[0] == '_')
        return jv_undefined_why(rt, out, "access to attribute '%s' of '%s' object is unsafe.", name,
                                jv_type_name(obj));
    if (obj.type == JV_NS) {
        const jv *v = jv_dict_get(rt, obj.u.ns->attrs, name);
        if (v)
            *out = jv_ref(*v);
        *found = v != NULL;
        return FK_OK;
    }
    if (obj.type == JV_LOOP) {
        const jloop *l = obj.u.loop;
        size_t i = l->index0, n = l->items->n;
        if (!strcmp(name, "index"))
            *out = jv_int((int64_t)i + 1);
        else if (!strcmp(name, "index0"))
            *out = jv_int((int64_t)i);
        else if (!strcmp(name, "revindex"))
            *out = jv_int((int64_t)(n - i));
        else if (!strcmp(name, "revindex0"))
            *out = jv_int((int64_t)(n - i - 1));
        else if (!strcmp(name, "first"))
            *out = jv_bool(i == 0);
        else if (!strcmp(name, "last"))
            *out = jv_bool(i + 1 == n);
        else if (!strcmp(name, "length"))
            *out = jv_int((int64_t)n);
        else if (!strcmp(name, "depth")) /* recursive loops are not supported: always the first level */
            *out = jv_int(1);
        else if (!strcmp(name, "depth0"))
            *out = jv_int(0);
        else if (!strcmp(name, "previtem"))
            return i > 0 ? (*out = jv_ref(l->items->items[i - 1]), FK_OK)
                         : jv_undefined_why(rt, out, "there is no previous item");
        else if (!strcmp(name, "nextitem"))
            return i + 1 < n ? (*out = jv_ref(l->items->items[i + 1]), FK_OK)
                             : jv_undefined_why(rt, out, "there is no next item");
        else
            goto method;
        return FK_OK;
    }
    if (obj.type == JV_FUNC && obj.u.fn->kind == JF_MACRO && !strcmp(name, "name"))
        return jv_str(rt, obj.u.fn->name, strlen(obj.u.fn->name), out);
method:;
    bool unsafe;
    int id = jinja_method_find(obj, name, &unsafe);
    if (unsafe)
        return jv_undefined_why(rt, out, "access to attribute '%s' of '%s' object is unsafe.", name,
                                jv_type_name(obj));
    if (id >= 0)
        return bound_method(rt, obj, id, out);
    *found = false;
    return FK_OK;
}

static fk_status no_attribute(jrt *rt, jv obj, const char *name, jv *out)
{
    const char *what = jv_object_name(obj);
    return jv_undefined_why(rt, out, "'%s' has no attribute '%s'", what, name);
}

fk_status jv_getattr(jrt *rt, jv obj, const char *name, jv *out)
{
    if (obj.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, obj);
    bool found;
    fk_status st = python_attribute(rt, obj, name, out, &found);
    if (st || found)
        return st;
    if (obj.type == JV_DICT) {
        const jv *v = jv_dict_get(rt, obj.u.d, name);
        if (v) {
            *out = jv_ref(*v);
            return FK_OK;
        }
    }
    return no_attribute(rt, obj, name, out);
}

/* An integer index (bool counts, as in Python) into n items: *at, or false when it is not one or out of range. */
static bool index_of(jv key, size_t n, size_t *at, bool *is_int)
{
    *is_int = key.type == JV_INT || key.type == JV_BOOL;
    if (!*is_int)
        return false;
    int64_t i = key.type == JV_BOOL ? key.u.b : key.u.i;
    if (i < 0)
        i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n)
        return false;
    *at = (size_t)i;
    return true;
}

static fk_status no_element(jrt *rt, jv obj, jv key, jv *out)
{
    jbuf b = {.max = SIZE_MAX};
    fk_status st = jfmt_repr(rt, &b, key);
    if (!st)
        st = jv_undefined_why(rt, out, "%s has no element %.100s", jv_object_name(obj), b.data);
    jbuf_free(&b);
    return st;
}

fk_status jv_getitem(jrt *rt, jv obj, jv key, jv *out)
{
    if (obj.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, obj);
    size_t at;
    bool is_int;
    fk_status st;
    switch (obj.type) {
    case JV_DICT: {
        const jv *v = NULL;
        if (key.type != JV_LIST && key.type != JV_DICT) {
            if ((st = jv_dict_find(rt, obj.u.d, key, &v)))
                return st;
        }
        if (v) {
            *out = jv_ref(*v);
            return FK_OK;
        }
        break;
    }
    case JV_LIST:
        if (index_of(key, obj.u.l->n, &at, &is_int)) {
            *out = jv_ref(obj.u.l->items[at]);
            return FK_OK;
        }
        break;
    case JV_STR:
        if (index_of(key, obj.u.s->ncp, &at, &is_int)) {
            size_t a = pystr_offset(obj.u.s->data, obj.u.s->len, at), b = a;
            pystr_next(obj.u.s->data, &b);
            return jv_str(rt, obj.u.s->data + a, b - a, out);
        }
        break;
    default: break;
    }
    if (key.type == JV_STR) {
        bool found;
        if ((st = python_attribute(rt, obj, key.u.s->data, out, &found)) || found)
            return st;
        return no_attribute(rt, obj, key.u.s->data, out);
    }
    return no_element(rt, obj, key, out);
}

/* Python's slice.indices(): the clamped start and the count for a sequence of n items. */
static fk_status slice_indices(jrt *rt, jv start, jv stop, jv step, int64_t n, int64_t *first, int64_t *by,
                               int64_t *count, bool *ok)
{
    *ok = false;
    const jv bounds[3] = {start, stop, step};
    int64_t v[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) {
        if (bounds[i].type == JV_NONE)
            continue;
        if (bounds[i].type != JV_INT && bounds[i].type != JV_BOOL)
            return FK_OK; /* TypeError, which jinja2's getitem turns into Undefined */
        v[i] = bounds[i].type == JV_BOOL ? bounds[i].u.b : bounds[i].u.i;
    }
    if (v[2] == 0)
        return jrt_fail(rt, "slice step cannot be zero");
    int64_t s = v[2];
    int64_t lo = s < 0 ? -1 : 0, hi = s < 0 ? n - 1 : n;
    int64_t a = start.type == JV_NONE ? (s < 0 ? hi : lo) : v[0];
    int64_t b = stop.type == JV_NONE ? (s < 0 ? lo : hi) : v[1];
    if (start.type != JV_NONE) {
        if (a < 0)
            a = a + n < lo ? lo : a + n;
        else if (a > hi)
            a = hi;
    }
    if (stop.type != JV_NONE) {
        if (b < 0)
            b = b + n < lo ? lo : b + n;
        else if (b > hi)
            b = hi;
    }
    *first = a;
    *by = s;
    *count = s > 0 ? (b > a ? (b - a - 1) / s + 1 : 0) : (b < a ? (a - b - 1) / -s + 1 : 0);
    *ok = true;
    return FK_OK;
}

fk_status jv_slice(jrt *rt, jv obj, jv start, jv stop, jv step, jv *out)
{
    if (obj.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, obj);
    if (obj.type != JV_LIST && obj.type != JV_STR)
        return jv_undefined_why(rt, out, "%s has no element slice", jv_object_name(obj));
    int64_t n = obj.type == JV_LIST ? (int64_t)obj.u.l->n : (int64_t)obj.u.s->ncp;
    int64_t first, by, count;
    bool ok;
    fk_status st = slice_indices(rt, start, stop, step, n, &first, &by, &count, &ok);
    if (st || !ok)
        return st ? st : jv_undefined_why(rt, out, "slice indices must be integers or None");
    if ((st = jrt_charge(rt, (uint64_t)count)))
        return st;
    if (obj.type == JV_LIST) {
        const jlist *l = obj.u.l;
        if ((st = jv_list(rt, (size_t)count, l->tuple, out)))
            return st;
        for (int64_t k = 0; k < count && !st; k++)
            st = jv_list_push(rt, out->u.l, jv_ref(l->items[first + k * by]));
        if (st)
            jv_clear(out);
        return st;
    }
    const jstr *s = obj.u.s;
    if (by == 1) {
        size_t a = pystr_offset(s->data, s->len, (size_t)first);
        size_t b = a + pystr_offset(s->data + a, s->len - a, (size_t)count);
        return jv_str(rt, s->data + a, b - a, out);
    }
    /* Any other step: the code points' offsets, then the picked ones. */
    size_t *offs = jrt_alloc(rt, (s->ncp + 1) * sizeof *offs);
    if (!offs)
        return rt->err->status;
    size_t k = 0;
    for (size_t at = 0; at < s->len; k++) {
        offs[k] = at;
        pystr_next(s->data, &at);
    }
    offs[k] = s->len;
    jbuf b = {.max = SIZE_MAX};
    for (int64_t i = 0; i < count && !st; i++) {
        size_t c = (size_t)(first + i * by);
        st = jbuf_put(rt, &b, s->data + offs[c], offs[c + 1] - offs[c]);
    }
    free(offs);
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    return st;
}

/* ---- arithmetic ---- */

static fk_status overflow(jrt *rt)
{
    return jrt_fail(rt, "integer overflow (beyond 64 bits)");
}

static double as_double(jv v)
{
    return v.type == JV_FLOAT ? v.u.f : v.type == JV_BOOL ? (double)v.u.b : (double)v.u.i;
}

static int64_t as_int(jv v)
{
    return v.type == JV_BOOL ? v.u.b : v.u.i;
}

/* s repeated n times (n <= 0: empty). */
static fk_status repeat(jrt *rt, jv seq, int64_t n, jv *out)
{
    if (n < 0)
        n = 0;
    fk_status st;
    if (seq.type == JV_STR) {
        size_t len = seq.u.s->len;
        if (len && (uint64_t)n > rt->limits.max_alloc / len)
            return jrt_fail(rt, "the template allocated more than %zu bytes", rt->limits.max_alloc);
        jstr *r;
        if ((st = jv_str_alloc(rt, len * (size_t)n, &r)))
            return st;
        for (int64_t i = 0; i < n; i++)
            memcpy(r->data + (size_t)i * len, seq.u.s->data, len);
        *out = jv_str_done(r);
        return FK_OK;
    }
    const jlist *l = seq.u.l;
    if (l->n && (uint64_t)n > rt->limits.max_alloc / (l->n * sizeof(jv)))
        return jrt_fail(rt, "the template allocated more than %zu bytes", rt->limits.max_alloc);
    if ((st = jv_list(rt, l->n * (size_t)n, l->tuple, out)))
        return st;
    for (int64_t i = 0; i < n && !st; i++)
        for (size_t k = 0; k < l->n && !st; k++)
            st = jv_list_push(rt, out->u.l, jv_ref(l->items[k]));
    if (st)
        jv_clear(out);
    return st;
}

static fk_status concat(jrt *rt, jv a, jv b, jv *out)
{
    fk_status st;
    if (a.type == JV_STR) {
        jstr *r;
        if ((st = jv_str_alloc(rt, a.u.s->len + b.u.s->len, &r)))
            return st;
        memcpy(r->data, a.u.s->data, a.u.s->len);
        memcpy(r->data + a.u.s->len, b.u.s->data, b.u.s->len);
        *out = jv_str_done(r);
        return FK_OK;
    }
    if ((st = jv_list(rt, a.u.l->n + b.u.l->n, a.u.l->tuple, out)))
        return st;
    for (size_t i = 0; i < a.u.l->n && !st; i++)
        st = jv_list_push(rt, out->u.l, jv_ref(a.u.l->items[i]));
    for (size_t i = 0; i < b.u.l->n && !st; i++)
        st = jv_list_push(rt, out->u.l, jv_ref(b.u.l->items[i]));
    if (st)
        jv_clear(out);
    return st;
}

/* Python's float floor division and modulo (float_divmod). */
static void float_divmod(double vx, double wx, double *floordiv, double *mod)
{
    double m = fmod(vx, wx);
    double div = (vx - m) / wx;
    if (m) {
        if ((wx < 0) != (m < 0)) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, wx);
    }
    double fd;
    if (div) {
        fd = floor(div);
        if (div - fd > 0.5)
            fd += 1.0;
    } else {
        fd = copysign(0.0, vx / wx);
    }
    *floordiv = fd;
    *mod = m;
}

static fk_status arithmetic(jrt *rt, jop op, jv a, jv b, jv *out)
{
    bool ints = a.type != JV_FLOAT && b.type != JV_FLOAT;
    int64_t x = ints ? as_int(a) : 0, y = ints ? as_int(b) : 0, r;
    double fx = as_double(a), fy = as_double(b);
    switch (op) {
    case JOP_ADD:
        if (!ints)
            break;
        if (__builtin_add_overflow(x, y, &r))
            return overflow(rt);
        *out = jv_int(r);
        return FK_OK;
    case JOP_SUB:
        if (!ints)
            break;
        if (__builtin_sub_overflow(x, y, &r))
            return overflow(rt);
        *out = jv_int(r);
        return FK_OK;
    case JOP_MUL:
        if (!ints)
            break;
        if (__builtin_mul_overflow(x, y, &r))
            return overflow(rt);
        *out = jv_int(r);
        return FK_OK;
    case JOP_DIV:
        if (ints ? y == 0 : fy == 0)
            return jrt_fail(rt, "division by zero");
        *out = jv_float(ints ? (double)x / (double)y : fx / fy);
        return FK_OK;
    case JOP_FLOORDIV:
    case JOP_MOD:
        if (ints) {
            if (y == 0)
                return jrt_fail(rt, op == JOP_MOD ? "integer modulo by zero" : "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1)
                return op == JOP_MOD ? (*out = jv_int(0), FK_OK) : overflow(rt);
            int64_t q = x / y, m = x % y;
            if (m && ((m < 0) != (y < 0))) {
                m += y;
                q -= 1;
            }
            *out = jv_int(op == JOP_MOD ? m : q);
            return FK_OK;
        }
        if (fy == 0)
            return jrt_fail(rt, op == JOP_MOD ? "float modulo" : "float floor division by zero");
        {
            double fd, m;
            float_divmod(fx, fy, &fd, &m);
            *out = jv_float(op == JOP_MOD ? m : fd);
        }
        return FK_OK;
    case JOP_POW:
        if (ints && y >= 0) {
            int64_t acc = 1, base = x;
            for (int64_t e = y; e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(acc, base, &acc))
                    return overflow(rt);
                if (e > 1 && __builtin_mul_overflow(base, base, &base))
                    return overflow(rt);
            }
            *out = jv_int(acc);
            return FK_OK;
        }
        if (fx == 0 && fy < 0)
            return jrt_fail(rt, "0.0 cannot be raised to a negative power");
        if (fx < 0 && fy != floor(fy))
            return jrt_fail(rt, "a negative number to a fractional power (a complex number) is not supported");
        *out = jv_float(pow(fx, fy));
        return FK_OK;
    default: break;
    }
    double v = op == JOP_ADD ? fx + fy : op == JOP_SUB ? fx - fy : fx * fy;
    *out = jv_float(v);
    return FK_OK;
}

fk_status jv_binop(jrt *rt, jop op, jv a, jv b, jv *out)
{
    if (jv_is_number(a) && jv_is_number(b))
        return arithmetic(rt, op, a, b, out);
    const char *sym = jinja_op_text(op);
    if (op == JOP_ADD) {
        if (a.type == JV_STR && b.type == JV_STR)
            return concat(rt, a, b, out);
        if (a.type == JV_LIST && b.type == JV_LIST && a.u.l->tuple == b.u.l->tuple)
            return concat(rt, a, b, out);
        if ((a.type == JV_STR || a.type == JV_LIST) && b.type != JV_UNDEFINED)
            return jrt_fail(rt, "can only concatenate %s (not \"%s\") to %s", jv_type_name(a), jv_type_name(b),
                            jv_type_name(a));
    }
    if (op == JOP_MUL) {
        if ((a.type == JV_STR || a.type == JV_LIST) && (b.type == JV_INT || b.type == JV_BOOL))
            return repeat(rt, a, as_int(b), out);
        if ((b.type == JV_STR || b.type == JV_LIST) && (a.type == JV_INT || a.type == JV_BOOL))
            return repeat(rt, b, as_int(a), out);
        if ((a.type == JV_STR || a.type == JV_LIST) && b.type != JV_UNDEFINED)
            return jrt_fail(rt, "can't multiply sequence by non-int of type '%s'", jv_type_name(b));
    }
    if (op == JOP_MOD && a.type == JV_STR)
        return jrt_fail(rt, "printf-style string formatting ('%%' on a string) is not supported");
    char fmt[96];
    snprintf(fmt, sizeof fmt, "unsupported operand type(s) for %s: '%%s' and '%%s'", sym);
    return fail_type(rt, fmt, a, b);
}

fk_status jv_unary(jrt *rt, bool neg, jv a, jv *out)
{
    if (a.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, a);
    if (a.type == JV_FLOAT) {
        *out = jv_float(neg ? -a.u.f : a.u.f);
        return FK_OK;
    }
    if (a.type == JV_INT || a.type == JV_BOOL) {
        int64_t v = as_int(a);
        if (neg && v == INT64_MIN)
            return overflow(rt);
        *out = jv_int(neg ? -v : v);
        return FK_OK;
    }
    return jrt_fail(rt, "bad operand type for unary %c: '%s'", neg ? '-' : '+', jv_type_name(a));
}

/* ---- containers ---- */

fk_status jv_contains(jrt *rt, jv container, jv item, bool *out)
{
    *out = false;
    fk_status st = FK_OK;
    switch (container.type) {
    case JV_STR:
        if (item.type == JV_UNDEFINED)
            return jv_fail_undefined(rt, item);
        if (item.type != JV_STR)
            return jrt_fail(rt, "'in <string>' requires string as left operand, not %s", jv_type_name(item));
        {
            int64_t at = pystr_search(rt, container.u.s->data, container.u.s->len, item.u.s->data, item.u.s->len);
            if (at == -2)
                return rt->err->status;
            *out = at >= 0;
        }
        return FK_OK;
    case JV_LIST:
        for (size_t i = 0; i < container.u.l->n && !*out && !st; i++)
            st = jv_eq(rt, container.u.l->items[i], item, out);
        return st;
    case JV_DICT: {
        if (item.type == JV_LIST && !item.u.l->tuple)
            return jrt_fail(rt, "unhashable type: 'list'");
        if (item.type == JV_DICT)
            return jrt_fail(rt, "unhashable type: 'dict'");
        const jv *v;
        st = jv_dict_find(rt, container.u.d, item, &v);
        *out = v != NULL;
        return st;
    }
    case JV_UNDEFINED: return FK_OK; /* Undefined iterates as empty */
    default: return jrt_fail(rt, "argument of type '%s' is not iterable", jv_type_name(container));
    }
}

fk_status jv_len(jrt *rt, jv v, int64_t *out)
{
    switch (v.type) {
    case JV_STR: *out = (int64_t)v.u.s->ncp; return FK_OK;
    case JV_LIST: *out = (int64_t)v.u.l->n; return FK_OK;
    case JV_DICT: *out = (int64_t)v.u.d->n; return FK_OK;
    case JV_UNDEFINED: *out = 0; return FK_OK;
    case JV_LOOP: *out = (int64_t)v.u.loop->items->n; return FK_OK;
    default: return jrt_fail(rt, "object of type '%s' has no len()", jv_type_name(v));
    }
}

fk_status jv_iter(jrt *rt, jv v, jv *out)
{
    fk_status st;
    switch (v.type) {
    case JV_LIST: *out = jv_ref(v); return FK_OK;
    case JV_UNDEFINED: return jv_list(rt, 0, false, out);
    case JV_DICT:
        if ((st = jv_list(rt, v.u.d->n, false, out)))
            return st;
        for (size_t i = 0; i < v.u.d->n && !st; i++)
            st = jv_list_push(rt, out->u.l, jv_ref(v.u.d->keys[i]));
        break;
    case JV_STR:
        if ((st = jv_list(rt, v.u.s->ncp, false, out)))
            return st;
        for (size_t at = 0; at < v.u.s->len && !st;) {
            size_t from = at;
            pystr_next(v.u.s->data, &at);
            jv c;
            if (!(st = jv_str(rt, v.u.s->data + from, at - from, &c)))
                st = jv_list_push(rt, out->u.l, c);
        }
        break;
    default: return jrt_fail(rt, "'%s' object is not iterable", jv_type_name(v));
    }
    if (st)
        jv_clear(out);
    return st;
}
