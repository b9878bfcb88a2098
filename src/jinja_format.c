/* jinja_format.c — values as text: Python's str(), repr() and float repr, and json.dumps as transformers' tojson
 * calls it (see jinja_format.h). */
#include "jinja_format.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_str.h"
#include "utf8.h"

void jfmt_float(double v, char out[32])
{
    if (isnan(v)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(v)) {
        strcpy(out, v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == 0) {
        strcpy(out, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    /* The fewest significant digits that read back as v (printf rounds correctly), as "d.ddde±x". */
    char sci[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, v);
        if (strtod(sci, NULL) == v)
            break;
    }
    char digits[24];
    size_t nd = 0;
    const char *c = sci;
    bool neg = *c == '-';
    if (neg)
        c++;
    for (; *c && *c != 'e'; c++)
        if (*c != '.')
            digits[nd++] = *c;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(c + 1);
    int decpt = exp10 + 1; /* v = 0.DIGITS × 10^decpt */
    char *o = out;
    if (neg)
        *o++ = '-';
    if (decpt > -4 && decpt <= 16) {
        /* Python's repr: positional notation for exponents -5 < e < 16, with ".0" when integral. */
        if (decpt <= 0) {
            o += sprintf(o, "0.");
            for (int i = 0; i < -decpt; i++)
                *o++ = '0';
            o += sprintf(o, "%s", digits);
        } else if ((size_t)decpt >= nd) {
            o += sprintf(o, "%s", digits);
            for (size_t i = nd; i < (size_t)decpt; i++)
                *o++ = '0';
            o += sprintf(o, ".0");
        } else {
            o += sprintf(o, "%.*s.%s", decpt, digits, digits + decpt);
        }
        *o = '\0';
    } else {
        o += sprintf(o, "%c", digits[0]);
        if (nd > 1)
            o += sprintf(o, ".%s", digits + 1);
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
}

/* repr() of a string: Python's choice of quotes and escapes. */
static fk_status repr_string(jrt *rt, jbuf *b, const jstr *s)
{
    char quote = memchr(s->data, '\'', s->len) && !memchr(s->data, '"', s->len) ? '"' : '\'';
    fk_status st = jbuf_putc(rt, b, quote);
    for (size_t at = 0; !st && at < s->len;) {
        size_t here = at;
        uint32_t cp = pystr_next(s->data, &at);
        if (cp == (uint32_t)quote || cp == '\\')
            st = jbuf_printf(rt, b, "\\%c", (char)cp);
        else if (cp == '\t')
            st = jbuf_put(rt, b, "\\t", 2);
        else if (cp == '\n')
            st = jbuf_put(rt, b, "\\n", 2);
        else if (cp == '\r')
            st = jbuf_put(rt, b, "\\r", 2);
        else if (cp < 0x7f ? cp >= 0x20 : pystr_isprintable(cp))
            st = jbuf_put(rt, b, s->data + here, at - here);
        else if (cp <= 0xff)
            st = jbuf_printf(rt, b, "\\x%02x", cp);
        else if (cp <= 0xffff)
            st = jbuf_printf(rt, b, "\\u%04x", cp);
        else
            st = jbuf_printf(rt, b, "\\U%08x", cp);
    }
    return st ? st : jbuf_putc(rt, b, quote);
}

static fk_status unprintable(jrt *rt, jv v)
{
    return jrt_fail(rt, "cannot convert %s '%s' to a string", v.u.fn->kind == JF_GLOBAL ? "function" : "method",
                    v.u.fn->name);
}

static fk_status repr_inner(jrt *rt, jbuf *b, jv v, bool as_str)
{
    fk_status st = FK_OK;
    char num[32];
    switch (v.type) {
    case JV_UNDEFINED: return as_str ? FK_OK : jbuf_put(rt, b, "Undefined", 9);
    case JV_NONE: return jbuf_put(rt, b, "None", 4);
    case JV_BOOL: return v.u.b ? jbuf_put(rt, b, "True", 4) : jbuf_put(rt, b, "False", 5);
    case JV_INT: return jbuf_printf(rt, b, "%" PRId64, v.u.i);
    case JV_FLOAT: jfmt_float(v.u.f, num); return jbuf_put(rt, b, num, strlen(num));
    case JV_STR: return as_str ? jbuf_put(rt, b, v.u.s->data, v.u.s->len) : repr_string(rt, b, v.u.s);
    case JV_LIST: {
        const jlist *l = v.u.l;
        st = jbuf_putc(rt, b, l->tuple ? '(' : '[');
        for (size_t i = 0; i < l->n && !st; i++) {
            if (i)
                st = jbuf_put(rt, b, ", ", 2);
            if (!st)
                st = repr_inner(rt, b, l->items[i], false);
        }
        if (!st && l->tuple && l->n == 1)
            st = jbuf_putc(rt, b, ',');
        return st ? st : jbuf_putc(rt, b, l->tuple ? ')' : ']');
    }
    case JV_DICT: {
        const jdict *d = v.u.d;
        st = jbuf_putc(rt, b, '{');
        for (size_t i = 0; i < d->n && !st; i++) {
            if (i)
                st = jbuf_put(rt, b, ", ", 2);
            if (!st)
                st = repr_inner(rt, b, d->keys[i], false);
            if (!st)
                st = jbuf_put(rt, b, ": ", 2);
            if (!st)
                st = repr_inner(rt, b, d->vals[i], false);
        }
        return st ? st : jbuf_putc(rt, b, '}');
    }
    case JV_NS:
        if (v.u.ns->visiting)
            return jbuf_put(rt, b, "<Namespace {...}>", 17);
        if (rt->depth >= rt->limits.max_depth)
            return jrt_fail(rt, "namespaces nested more than %d deep", rt->limits.max_depth);
        v.u.ns->visiting = true;
        rt->depth++;
        st = jbuf_put(rt, b, "<Namespace ", 11);
        if (!st)
            st = repr_inner(rt, b, (jv){.type = JV_DICT, .u.d = v.u.ns->attrs}, false);
        rt->depth--;
        v.u.ns->visiting = false;
        return st ? st : jbuf_putc(rt, b, '>');
    case JV_FUNC:
        if (v.u.fn->kind != JF_MACRO)
            return unprintable(rt, v);
        return jbuf_printf(rt, b, "<Macro '%s'>", v.u.fn->name);
    case JV_LOOP:
        return jbuf_printf(rt, b, "<LoopContext %zu/%zu>", v.u.loop->index0 + 1, v.u.loop->items->n);
    }
    return st;
}

fk_status jfmt_str(jrt *rt, jbuf *b, jv v)
{
    return repr_inner(rt, b, v, true);
}

fk_status jfmt_repr(jrt *rt, jbuf *b, jv v)
{
    return repr_inner(rt, b, v, false);
}

fk_status jv_to_str(jrt *rt, jv v, jv *out)
{
    if (v.type == JV_STR) {
        *out = jv_ref(v);
        return FK_OK;
    }
    jbuf b = {.max = SIZE_MAX};
    fk_status st = jfmt_str(rt, &b, v);
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    return st;
}

/* ---- json.dumps ---- */

static fk_status json_string(jrt *rt, jbuf *b, const char *s, size_t len, bool ensure_ascii)
{
    fk_status st = jbuf_putc(rt, b, '"');
    for (size_t at = 0; !st && at < len;) {
        size_t here = at;
        uint32_t cp = pystr_next(s, &at);
        switch (cp) {
        case '"': st = jbuf_put(rt, b, "\\\"", 2); break;
        case '\\': st = jbuf_put(rt, b, "\\\\", 2); break;
        case '\n': st = jbuf_put(rt, b, "\\n", 2); break;
        case '\r': st = jbuf_put(rt, b, "\\r", 2); break;
        case '\t': st = jbuf_put(rt, b, "\\t", 2); break;
        case '\b': st = jbuf_put(rt, b, "\\b", 2); break;
        case '\f': st = jbuf_put(rt, b, "\\f", 2); break;
        default:
            if (cp < 0x20)
                st = jbuf_printf(rt, b, "\\u%04x", cp);
            else if (cp < 0x7f || !ensure_ascii)
                st = jbuf_put(rt, b, s + here, at - here);
            else if (cp <= 0xffff)
                st = jbuf_printf(rt, b, "\\u%04x", cp);
            else
                st = jbuf_printf(rt, b, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
                                 0xdc00 + ((cp - 0x10000) & 0x3ff));
        }
    }
    return st ? st : jbuf_putc(rt, b, '"');
}

static fk_status json_float(jrt *rt, jbuf *b, double f)
{
    if (isnan(f))
        return jbuf_put(rt, b, "NaN", 3);
    if (isinf(f))
        return f > 0 ? jbuf_put(rt, b, "Infinity", 8) : jbuf_put(rt, b, "-Infinity", 9);
    char num[32];
    jfmt_float(f, num);
    return jbuf_put(rt, b, num, strlen(num));
}

/* A newline and the indent of `level` when indenting. */
static fk_status json_newline(jrt *rt, jbuf *b, const jjson_opts *o, int level)
{
    fk_status st = jbuf_putc(rt, b, '\n');
    for (int i = 0; i < level && !st; i++)
        st = jbuf_put(rt, b, o->indent, o->indent_len);
    return st;
}

static fk_status json_key(jrt *rt, jbuf *b, jv k, const jjson_opts *o)
{
    switch (k.type) {
    case JV_STR: return json_string(rt, b, k.u.s->data, k.u.s->len, o->ensure_ascii);
    case JV_NONE: return jbuf_put(rt, b, "\"null\"", 6);
    case JV_BOOL: return k.u.b ? jbuf_put(rt, b, "\"true\"", 6) : jbuf_put(rt, b, "\"false\"", 7);
    case JV_INT: return jbuf_printf(rt, b, "\"%" PRId64 "\"", k.u.i);
    case JV_FLOAT: {
        fk_status st = jbuf_putc(rt, b, '"');
        if (!st)
            st = json_float(rt, b, k.u.f);
        return st ? st : jbuf_putc(rt, b, '"');
    }
    default: return jrt_fail(rt, "keys must be str, int, float, bool or None, not %s", jv_type_name(k));
    }
}

/* Stable merge sort of a dict's key indexes by key (Python's sorted(), TypeError between unorderable keys). */
static fk_status sort_keys(jrt *rt, const jdict *d, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2)
        return FK_OK;
    size_t h = n / 2;
    fk_status st = sort_keys(rt, d, idx, tmp, h);
    if (!st)
        st = sort_keys(rt, d, idx + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (!st && (i < h || j < n)) {
        int c = 1;
        if (i < h && j < n)
            st = jv_cmp(rt, d->keys[idx[j]], d->keys[idx[i]], &c);
        tmp[k++] = j < n && (i >= h || c < 0) ? idx[j++] : idx[i++];
    }
    if (!st)
        memcpy(idx, tmp, n * sizeof *idx);
    return st;
}

static fk_status json_value(jrt *rt, jbuf *b, jv v, const jjson_opts *o, int level);

static fk_status json_dict(jrt *rt, jbuf *b, const jdict *d, const jjson_opts *o, int level)
{
    if (d->n == 0)
        return jbuf_put(rt, b, "{}", 2);
    size_t *idx = jrt_alloc(rt, 2 * d->n * sizeof *idx);
    if (!idx)
        return rt->err->status;
    for (size_t i = 0; i < d->n; i++)
        idx[i] = i;
    fk_status st = o->sort_keys ? sort_keys(rt, d, idx, idx + d->n, d->n) : FK_OK;
    if (!st)
        st = jbuf_putc(rt, b, '{');
    if (!st && o->indent_set)
        st = json_newline(rt, b, o, level + 1);
    for (size_t i = 0; i < d->n && !st; i++) {
        if (i) {
            st = jbuf_put(rt, b, o->item_sep, o->item_sep_len);
            if (!st && o->indent_set)
                st = json_newline(rt, b, o, level + 1);
        }
        if (!st)
            st = json_key(rt, b, d->keys[idx[i]], o);
        if (!st)
            st = jbuf_put(rt, b, o->key_sep, o->key_sep_len);
        if (!st)
            st = json_value(rt, b, d->vals[idx[i]], o, level + 1);
    }
    free(idx);
    if (!st && o->indent_set)
        st = json_newline(rt, b, o, level);
    return st ? st : jbuf_putc(rt, b, '}');
}

static fk_status json_value(jrt *rt, jbuf *b, jv v, const jjson_opts *o, int level)
{
    fk_status st;
    switch (v.type) {
    case JV_NONE: return jbuf_put(rt, b, "null", 4);
    case JV_BOOL: return v.u.b ? jbuf_put(rt, b, "true", 4) : jbuf_put(rt, b, "false", 5);
    case JV_INT: return jbuf_printf(rt, b, "%" PRId64, v.u.i);
    case JV_FLOAT: return json_float(rt, b, v.u.f);
    case JV_STR: return json_string(rt, b, v.u.s->data, v.u.s->len, o->ensure_ascii);
    case JV_LIST:
        if (v.u.l->n == 0)
            return jbuf_put(rt, b, "[]", 2);
        st = jbuf_putc(rt, b, '[');
        if (!st && o->indent_set)
            st = json_newline(rt, b, o, level + 1);
        for (size_t i = 0; i < v.u.l->n && !st; i++) {
            if (i) {
                st = jbuf_put(rt, b, o->item_sep, o->item_sep_len);
                if (!st && o->indent_set)
                    st = json_newline(rt, b, o, level + 1);
            }
            if (!st)
                st = json_value(rt, b, v.u.l->items[i], o, level + 1);
        }
        if (!st && o->indent_set)
            st = json_newline(rt, b, o, level);
        return st ? st : jbuf_putc(rt, b, ']');
    case JV_DICT: return json_dict(rt, b, v.u.d, o, level);
    case JV_NS: return jrt_fail(rt, "Object of type TemplateNamespace is not JSON serializable");
    default: return jrt_fail(rt, "Object of type %s is not JSON serializable", jv_type_name(v));
    }
}

fk_status jfmt_json(jrt *rt, jbuf *b, jv v, const jjson_opts *opts)
{
    jjson_opts o = *opts;
    if (!o.item_sep) {
        o.item_sep = o.indent_set ? "," : ", ";
        o.item_sep_len = o.indent_set ? 1 : 2;
    }
    if (!o.key_sep) {
        o.key_sep = ": ";
        o.key_sep_len = 2;
    }
    return json_value(rt, b, v, &o, 0);
}
