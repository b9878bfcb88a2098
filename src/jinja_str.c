/* jinja_str.c — Python's str methods on UTF-8 text (see jinja_str.h). Case mappings come from the C library's
 * C.UTF-8 locale (towupper_l/towlower_l: Unicode's simple mappings, identical to Python 3.11's for every code point
 * that maps to one) plus Unicode's one-to-many SpecialCasing table below; printable and whitespace follow
 * Python 3.11 (Unicode 14). */
#define _GNU_SOURCE /* memmem */
#include "jinja_str.h"

#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>

#include "utf8.h"

typedef struct cp_range {
    uint32_t lo, hi;
} cp_range;

static bool in_ranges(uint32_t cp, const cp_range *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi)
            return true;
    return false;
}

bool pystr_isspace(uint32_t cp)
{
    static const cp_range space[] = {{0x9, 0xd},       {0x1c, 0x20},     {0x85, 0x85},     {0xa0, 0xa0},
                                     {0x1680, 0x1680}, {0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f},
                                     {0x205f, 0x205f}, {0x3000, 0x3000}};
    return cp < 0x80 ? (cp >= 0x9 && cp <= 0xd) || (cp >= 0x1c && cp <= 0x20)
                     : in_ranges(cp, space, sizeof space / sizeof space[0]);
}

static locale_t utf8_locale;
static pthread_once_t utf8_locale_once = PTHREAD_ONCE_INIT;

static void load_utf8_locale(void)
{
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* The C.UTF-8 locale, or 0 where the system lacks it (then only ASCII letters change case). */
static locale_t ctype(void)
{
    pthread_once(&utf8_locale_once, load_utf8_locale);
    return utf8_locale;
}

bool pystr_isprintable(uint32_t cp)
{
    if (cp < 0x7f)
        return cp >= 0x20;
    /* Python's non-printables beyond the C library's: Zs, Zl, Zp, Cf and private use (Co). */
    static const cp_range format_or_space[] = {
        {0xa0, 0xa0},       {0xad, 0xad},       {0x600, 0x605},     {0x61c, 0x61c},     {0x6dd, 0x6dd},
        {0x70f, 0x70f},     {0x890, 0x891},     {0x8e2, 0x8e2},     {0x1680, 0x1680},   {0x180e, 0x180e},
        {0x2000, 0x200f},   {0x2028, 0x202f},   {0x205f, 0x2064},   {0x2066, 0x206f},   {0x3000, 0x3000},
        {0xfeff, 0xfeff},   {0xfff9, 0xfffb},   {0x110bd, 0x110bd}, {0x110cd, 0x110cd}, {0x13430, 0x13438},
        {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0001, 0xe0001}, {0xe0020, 0xe007f}, {0xe000, 0xf8ff},
        {0xf0000, 0x10ffff}};
    if (cp < 0xa0 || in_ranges(cp, format_or_space, sizeof format_or_space / sizeof format_or_space[0]))
        return false;
    locale_t l = ctype();
    return l ? iswprint_l((wint_t)cp, l) != 0 : true;
}

uint32_t pystr_next(const char *s, size_t *at)
{
    uint32_t cp;
    int k = utf8_next(s + *at, 4, &cp);
    *at += (size_t)(k > 0 ? k : 1);
    return k > 0 ? cp : 0xFFFD;
}

size_t pystr_offset(const char *s, size_t len, size_t index)
{
    size_t at = 0;
    for (; index > 0 && at < len; index--)
        for (at++; at < len && ((unsigned char)s[at] & 0xC0) == 0x80;)
            at++;
    return at;
}

/* True when cp is one of the code points of chars. */
static bool in_chars(const jstr *chars, uint32_t cp)
{
    for (size_t i = 0; i < chars->len;)
        if (pystr_next(chars->data, &i) == cp)
            return true;
    return false;
}

static bool strippable(const jstr *chars, uint32_t cp)
{
    return chars ? in_chars(chars, cp) : pystr_isspace(cp);
}

void pystr_strip(const char *s, size_t len, const jstr *chars, pystr_side side, size_t *start, size_t *end)
{
    size_t a = 0, b = len;
    if (side & PYSTR_LEFT)
        while (a < b) {
            size_t next = a;
            if (!strippable(chars, pystr_next(s, &next)))
                break;
            a = next;
        }
    if (side & PYSTR_RIGHT)
        while (b > a) {
            size_t prev = b - 1;
            while (prev > a && ((unsigned char)s[prev] & 0xC0) == 0x80)
                prev--;
            size_t at = prev;
            if (!strippable(chars, pystr_next(s, &at)))
                break;
            b = prev;
        }
    *start = a;
    *end = b;
}

int64_t pystr_search(jrt *rt, const char *hay, size_t hay_len, const char *needle, size_t needle_len)
{
    if (jrt_charge(rt, hay_len / 16 + 1))
        return -2;
    if (needle_len == 0)
        return 0;
    const char *p = memmem(hay, hay_len, needle, needle_len);
    return p ? p - hay : -1;
}

/* The last occurrence's byte offset, or -1. */
static int64_t search_last(jrt *rt, const char *hay, size_t hay_len, const char *needle, size_t needle_len)
{
    if (jrt_charge(rt, hay_len / 16 + 1))
        return -2;
    if (needle_len > hay_len)
        return -1;
    for (size_t i = hay_len - needle_len + 1; i-- > 0;)
        if (memcmp(hay + i, needle, needle_len) == 0)
            return (int64_t)i;
    return -1;
}

static size_t code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

int64_t pystr_find(jrt *rt, const jstr *s, const jstr *sub, bool right)
{
    int64_t at = right ? search_last(rt, s->data, s->len, sub->data, sub->len)
                       : pystr_search(rt, s->data, s->len, sub->data, sub->len);
    return at < 0 ? at : (int64_t)code_points(s->data, (size_t)at);
}

int64_t pystr_count(jrt *rt, const jstr *s, const jstr *sub)
{
    if (sub->len == 0)
        return (int64_t)s->ncp + 1;
    int64_t n = 0;
    size_t at = 0;
    for (;;) {
        int64_t k = pystr_search(rt, s->data + at, s->len - at, sub->data, sub->len);
        if (k < 0)
            return k == -2 ? -2 : n;
        n++;
        at += (size_t)k + sub->len;
    }
}

static fk_status push_str(jrt *rt, jlist *l, const char *s, size_t len)
{
    jv v;
    fk_status st = jv_str(rt, s, len, &v);
    return st ? st : jv_list_push(rt, l, v);
}

static fk_status spent(jrt *rt)
{
    return rt->err->status;
}

/* Splits on runs of whitespace, from the left or the right. */
static fk_status split_whitespace(jrt *rt, const jstr *s, int64_t maxsplit, bool right, jlist *l)
{
    const char *d = s->data;
    fk_status st = jrt_charge(rt, s->len / 16 + 1);
    if (!right) {
        size_t at = 0;
        while (!st) {
            size_t next = at;
            while (at < s->len && pystr_isspace(pystr_next(d, &next)))
                at = next;
            if (at >= s->len)
                break;
            size_t end = at;
            if (maxsplit >= 0 && (int64_t)l->n >= maxsplit)
                return push_str(rt, l, d + at, s->len - at); /* the rest, trailing whitespace kept */
            for (next = end; end < s->len && !pystr_isspace(pystr_next(d, &next));)
                end = next;
            st = push_str(rt, l, d + at, end - at);
            at = end;
        }
        return st;
    }
    /* From the right: collect in reverse, then reverse the list. */
    size_t end = s->len;
    while (!st) {
        size_t a, b;
        pystr_strip(d, end, NULL, PYSTR_RIGHT, &a, &b);
        end = b;
        if (end == 0)
            break;
        if (maxsplit >= 0 && (int64_t)l->n >= maxsplit) {
            st = push_str(rt, l, d, end); /* the rest, leading whitespace kept */
            break;
        }
        size_t start = end;
        while (start > 0) {
            size_t prev = start - 1;
            while (prev > 0 && ((unsigned char)d[prev] & 0xC0) == 0x80)
                prev--;
            size_t at = prev;
            if (pystr_isspace(pystr_next(d, &at)))
                break;
            start = prev;
        }
        st = push_str(rt, l, d + start, end - start);
        end = start;
    }
    for (size_t i = 0; i < l->n / 2; i++) {
        jv t = l->items[i];
        l->items[i] = l->items[l->n - 1 - i];
        l->items[l->n - 1 - i] = t;
    }
    return st;
}

fk_status pystr_split(jrt *rt, const jstr *s, const jstr *sep, int64_t maxsplit, bool right, jv *out)
{
    if (sep && sep->len == 0)
        return jrt_fail(rt, "empty separator");
    fk_status st = jv_list(rt, 0, false, out);
    if (st)
        return st;
    jlist *l = out->u.l;
    if (!sep) {
        st = split_whitespace(rt, s, maxsplit, right, l);
    } else if (!right) {
        size_t at = 0;
        while (!st) {
            int64_t k = maxsplit >= 0 && (int64_t)l->n >= maxsplit
                            ? -1
                            : pystr_search(rt, s->data + at, s->len - at, sep->data, sep->len);
            if (k == -2) {
                st = spent(rt);
                break;
            }
            size_t end = k < 0 ? s->len : at + (size_t)k;
            st = push_str(rt, l, s->data + at, end - at);
            if (k < 0)
                break;
            at = end + sep->len;
        }
    } else {
        size_t end = s->len;
        while (!st) {
            int64_t k = maxsplit >= 0 && (int64_t)l->n >= maxsplit ? -1
                                                                   : search_last(rt, s->data, end, sep->data, sep->len);
            if (k == -2) {
                st = spent(rt);
                break;
            }
            size_t start = k < 0 ? 0 : (size_t)k + sep->len;
            st = push_str(rt, l, s->data + start, end - start);
            if (k < 0)
                break;
            end = (size_t)k;
        }
        for (size_t i = 0; !st && i < l->n / 2; i++) {
            jv t = l->items[i];
            l->items[i] = l->items[l->n - 1 - i];
            l->items[l->n - 1 - i] = t;
        }
    }
    if (st)
        jv_clear(out);
    return st;
}

/* Line boundaries of str.splitlines: \n \r \v \f \x1c \x1d \x1e \x85 U+2028 U+2029 (and \r\n as one). */
static bool line_break(uint32_t cp)
{
    return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 ||
           cp == 0x2028 || cp == 0x2029;
}

fk_status pystr_splitlines(jrt *rt, const jstr *s, bool keepends, jv *out)
{
    fk_status st = jv_list(rt, 0, false, out);
    if (!st)
        st = jrt_charge(rt, s->len / 16 + 1);
    size_t start = 0, at = 0;
    while (!st && at < s->len) {
        size_t here = at;
        uint32_t cp = pystr_next(s->data, &at);
        if (!line_break(cp))
            continue;
        if (cp == '\r' && at < s->len && s->data[at] == '\n')
            at++;
        st = push_str(rt, out->u.l, s->data + start, (keepends ? at : here) - start);
        start = at;
    }
    if (!st && start < s->len)
        st = push_str(rt, out->u.l, s->data + start, s->len - start);
    if (st && out->type == JV_LIST)
        jv_clear(out);
    return st;
}

fk_status pystr_replace(jrt *rt, const jstr *s, const jstr *old, const jstr *rep, int64_t count, jv *out)
{
    jbuf b = {.max = SIZE_MAX};
    fk_status st = FK_OK;
    if (old->len == 0) {
        /* Python inserts rep before every character and at the end, up to count times. */
        size_t at = 0;
        int64_t done = 0;
        while (!st && (count < 0 || done < count)) {
            st = jbuf_put(rt, &b, rep->data, rep->len);
            done++;
            if (at >= s->len)
                break;
            size_t next = at;
            pystr_next(s->data, &next);
            if (!st)
                st = jbuf_put(rt, &b, s->data + at, next - at);
            at = next;
        }
        if (!st)
            st = jbuf_put(rt, &b, s->data + at, s->len - at);
    } else {
        size_t at = 0;
        int64_t done = 0;
        while (!st) {
            int64_t k = count >= 0 && done >= count ? -1
                                                    : pystr_search(rt, s->data + at, s->len - at, old->data, old->len);
            if (k == -2) {
                st = spent(rt);
                break;
            }
            size_t end = k < 0 ? s->len : at + (size_t)k;
            st = jbuf_put(rt, &b, s->data + at, end - at);
            if (k < 0 || st)
                break;
            st = jbuf_put(rt, &b, rep->data, rep->len);
            at = end + old->len;
            done++;
        }
    }
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    return st;
}

/* Unicode's unconditional one-to-many upper-case mappings (SpecialCasing.txt; Python's str.upper()). */
static const struct {
    uint32_t cp;
    const char *upper;
} special_upper[] = {
    {0xdf, "\x53\x53"},
    {0x149, "\xca\xbc\x4e"},
    {0x1f0, "\x4a\xcc\x8c"},
    {0x390, "\xce\x99\xcc\x88\xcc\x81"},
    {0x3b0, "\xce\xa5\xcc\x88\xcc\x81"},
    {0x587, "\xd4\xb5\xd5\x92"},
    {0x1e96, "\x48\xcc\xb1"},
    {0x1e97, "\x54\xcc\x88"},
    {0x1e98, "\x57\xcc\x8a"},
    {0x1e99, "\x59\xcc\x8a"},
    {0x1e9a, "\x41\xca\xbe"},
    {0x1f50, "\xce\xa5\xcc\x93"},
    {0x1f52, "\xce\xa5\xcc\x93\xcc\x80"},
    {0x1f54, "\xce\xa5\xcc\x93\xcc\x81"},
    {0x1f56, "\xce\xa5\xcc\x93\xcd\x82"},
    {0x1f80, "\xe1\xbc\x88\xce\x99"},
    {0x1f81, "\xe1\xbc\x89\xce\x99"},
    {0x1f82, "\xe1\xbc\x8a\xce\x99"},
    {0x1f83, "\xe1\xbc\x8b\xce\x99"},
    {0x1f84, "\xe1\xbc\x8c\xce\x99"},
    {0x1f85, "\xe1\xbc\x8d\xce\x99"},
    {0x1f86, "\xe1\xbc\x8e\xce\x99"},
    {0x1f87, "\xe1\xbc\x8f\xce\x99"},
    {0x1f88, "\xe1\xbc\x88\xce\x99"},
    {0x1f89, "\xe1\xbc\x89\xce\x99"},
    {0x1f8a, "\xe1\xbc\x8a\xce\x99"},
    {0x1f8b, "\xe1\xbc\x8b\xce\x99"},
    {0x1f8c, "\xe1\xbc\x8c\xce\x99"},
    {0x1f8d, "\xe1\xbc\x8d\xce\x99"},
    {0x1f8e, "\xe1\xbc\x8e\xce\x99"},
    {0x1f8f, "\xe1\xbc\x8f\xce\x99"},
    {0x1f90, "\xe1\xbc\xa8\xce\x99"},
    {0x1f91, "\xe1\xbc\xa9\xce\x99"},
    {0x1f92, "\xe1\xbc\xaa\xce\x99"},
    {0x1f93, "\xe1\xbc\xab\xce\x99"},
    {0x1f94, "\xe1\xbc\xac\xce\x99"},
    {0x1f95, "\xe1\xbc\xad\xce\x99"},
    {0x1f96, "\xe1\xbc\xae\xce\x99"},
    {0x1f97, "\xe1\xbc\xaf\xce\x99"},
    {0x1f98, "\xe1\xbc\xa8\xce\x99"},
    {0x1f99, "\xe1\xbc\xa9\xce\x99"},
    {0x1f9a, "\xe1\xbc\xaa\xce\x99"},
    {0x1f9b, "\xe1\xbc\xab\xce\x99"},
    {0x1f9c, "\xe1\xbc\xac\xce\x99"},
    {0x1f9d, "\xe1\xbc\xad\xce\x99"},
    {0x1f9e, "\xe1\xbc\xae\xce\x99"},
    {0x1f9f, "\xe1\xbc\xaf\xce\x99"},
    {0x1fa0, "\xe1\xbd\xa8\xce\x99"},
    {0x1fa1, "\xe1\xbd\xa9\xce\x99"},
    {0x1fa2, "\xe1\xbd\xaa\xce\x99"},
    {0x1fa3, "\xe1\xbd\xab\xce\x99"},
    {0x1fa4, "\xe1\xbd\xac\xce\x99"},
    {0x1fa5, "\xe1\xbd\xad\xce\x99"},
    {0x1fa6, "\xe1\xbd\xae\xce\x99"},
    {0x1fa7, "\xe1\xbd\xaf\xce\x99"},
    {0x1fa8, "\xe1\xbd\xa8\xce\x99"},
    {0x1fa9, "\xe1\xbd\xa9\xce\x99"},
    {0x1faa, "\xe1\xbd\xaa\xce\x99"},
    {0x1fab, "\xe1\xbd\xab\xce\x99"},
    {0x1fac, "\xe1\xbd\xac\xce\x99"},
    {0x1fad, "\xe1\xbd\xad\xce\x99"},
    {0x1fae, "\xe1\xbd\xae\xce\x99"},
    {0x1faf, "\xe1\xbd\xaf\xce\x99"},
    {0x1fb2, "\xe1\xbe\xba\xce\x99"},
    {0x1fb3, "\xce\x91\xce\x99"},
    {0x1fb4, "\xce\x86\xce\x99"},
    {0x1fb6, "\xce\x91\xcd\x82"},
    {0x1fb7, "\xce\x91\xcd\x82\xce\x99"},
    {0x1fbc, "\xce\x91\xce\x99"},
    {0x1fc2, "\xe1\xbf\x8a\xce\x99"},
    {0x1fc3, "\xce\x97\xce\x99"},
    {0x1fc4, "\xce\x89\xce\x99"},
    {0x1fc6, "\xce\x97\xcd\x82"},
    {0x1fc7, "\xce\x97\xcd\x82\xce\x99"},
    {0x1fcc, "\xce\x97\xce\x99"},
    {0x1fd2, "\xce\x99\xcc\x88\xcc\x80"},
    {0x1fd3, "\xce\x99\xcc\x88\xcc\x81"},
    {0x1fd6, "\xce\x99\xcd\x82"},
    {0x1fd7, "\xce\x99\xcc\x88\xcd\x82"},
    {0x1fe2, "\xce\xa5\xcc\x88\xcc\x80"},
    {0x1fe3, "\xce\xa5\xcc\x88\xcc\x81"},
    {0x1fe4, "\xce\xa1\xcc\x93"},
    {0x1fe6, "\xce\xa5\xcd\x82"},
    {0x1fe7, "\xce\xa5\xcc\x88\xcd\x82"},
    {0x1ff2, "\xe1\xbf\xba\xce\x99"},
    {0x1ff3, "\xce\xa9\xce\x99"},
    {0x1ff4, "\xce\x8f\xce\x99"},
    {0x1ff6, "\xce\xa9\xcd\x82"},
    {0x1ff7, "\xce\xa9\xcd\x82\xce\x99"},
    {0x1ffc, "\xce\xa9\xce\x99"},
    {0xfb00, "\x46\x46"},
    {0xfb01, "\x46\x49"},
    {0xfb02, "\x46\x4c"},
    {0xfb03, "\x46\x46\x49"},
    {0xfb04, "\x46\x46\x4c"},
    {0xfb05, "\x53\x54"},
    {0xfb06, "\x53\x54"},
    {0xfb13, "\xd5\x84\xd5\x86"},
    {0xfb14, "\xd5\x84\xd4\xb5"},
    {0xfb15, "\xd5\x84\xd4\xbb"},
    {0xfb16, "\xd5\x8e\xd5\x86"},
    {0xfb17, "\xd5\x84\xd4\xbd"},
};

static bool cased(uint32_t cp, locale_t l)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return l && (iswupper_l((wint_t)cp, l) || iswlower_l((wint_t)cp, l));
}

/* Appends the upper (or lower) case of cp. */
static fk_status put_case(jrt *rt, jbuf *b, uint32_t cp, bool upper, bool final_sigma, locale_t l)
{
    if (upper && cp >= 0xdf) {
        size_t lo = 0, hi = sizeof special_upper / sizeof special_upper[0];
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (special_upper[mid].cp < cp)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < sizeof special_upper / sizeof special_upper[0] && special_upper[lo].cp == cp)
            return jbuf_put(rt, b, special_upper[lo].upper, strlen(special_upper[lo].upper));
    }
    if (!upper && cp == 0x130) /* İ → i + combining dot above */
        return jbuf_put(rt, b, "i\xcc\x87", 3);
    uint32_t m;
    if (!upper && cp == 0x3a3 && final_sigma)
        m = 0x3c2;
    else if (cp < 0x80)
        m = upper ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp) : (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    else if (l)
        m = (uint32_t)(upper ? towupper_l((wint_t)cp, l) : towlower_l((wint_t)cp, l));
    else
        m = cp;
    char enc[4];
    return jbuf_put(rt, b, enc, (size_t)utf8_put(m, enc));
}

/* Python's Final_Sigma: a capital sigma after a cased letter and not before one lowers to ς. */
static bool is_final_sigma(const jstr *s, size_t next, bool after_cased, locale_t l)
{
    if (!after_cased)
        return false;
    if (next >= s->len)
        return true;
    return !cased(pystr_next(s->data, &next), l);
}

fk_status pystr_case_map(jrt *rt, const jstr *s, pystr_case mode, jv *out)
{
    locale_t l = ctype();
    jbuf b = {.max = SIZE_MAX};
    fk_status st = jrt_charge(rt, s->len / 16 + 1);
    bool prev_cased = false, first = true, word_start = true;
    for (size_t at = 0; !st && at < s->len;) {
        uint32_t cp = pystr_next(s->data, &at);
        bool upper;
        switch (mode) {
        case PYSTR_UPPER: upper = true; break;
        case PYSTR_LOWER: upper = false; break;
        case PYSTR_CAPITALIZE: upper = first; break;
        case PYSTR_TITLE: upper = !prev_cased; break;
        default: upper = word_start; break;
        }
        st = put_case(rt, &b, cp, upper, !upper && is_final_sigma(s, at, prev_cased, l), l);
        prev_cased = cased(cp, l);
        first = false;
        word_start = pystr_isspace(cp) || (cp < 0x80 && strchr("-({[<", (int)cp));
    }
    if (!st)
        st = jbuf_to_str(rt, &b, out);
    jbuf_free(&b);
    return st;
}
