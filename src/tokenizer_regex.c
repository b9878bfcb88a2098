/* tokenizer_regex.c — the Split and ByteLevel regexes: Hugging Face patterns (Oniguruma syntax) compiled with
 * PCRE2, and Oniguruma's find_iter over them.
 *
 * Oniguruma and PCRE2 (UTF + UCP) agree on \p{..}, classes, lookarounds and (?i:...), but not on \s and \w:
 * Oniguruma's \s is exactly Unicode White_Space while PCRE2's also matches U+180E, and Oniguruma's \w is
 * Letter|Mark|Number|Connector_Punctuation while PCRE2 10.42's is Letter|Number|_. Both are rewritten into
 * explicit classes before compiling. ^ and $ are line anchors in Oniguruma, hence PCRE2_MULTILINE. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"

#define WHITE_SPACE "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define WORD "\\p{L}\\p{M}\\p{N}\\p{Pc}"

typedef struct text {
    char *p;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->p = p, t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* Copies the pattern, replacing \s \S \w \W outside character classes and \s \w inside them (a negated class
 * cannot be nested in a class, so \S and \W inside one keep PCRE2's meaning). */
static void translate(const char *p, size_t n, text *out)
{
    int depth = 0; /* character class nesting: Oniguruma allows [a[b]] */
    for (size_t i = 0; i < n;) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char d = p[i + 1];
            if (d == 'Q') { /* \Q...\E is literal */
                const char *e = NULL;
                for (size_t j = i + 2; j + 1 < n && !e; j++)
                    if (p[j] == '\\' && p[j + 1] == 'E')
                        e = p + j + 2;
                size_t k = e ? (size_t)(e - p) : n;
                put(out, p + i, k - i);
                i = k;
                continue;
            }
            bool space = d == 's' || d == 'S', word = d == 'w' || d == 'W', negated = d == 'S' || d == 'W';
            if ((space || word) && !(depth > 0 && negated)) {
                const char *members = space ? WHITE_SPACE : WORD;
                if (depth > 0) {
                    puts_(out, members);
                } else {
                    puts_(out, negated ? "[^" : "[");
                    puts_(out, members);
                    puts_(out, "]");
                }
            } else {
                put(out, p + i, 2);
            }
            i += 2;
            continue;
        }
        if (c == '[') {
            if (depth > 0 && i + 1 < n && p[i + 1] == ':') { /* [:alpha:] inside a class */
                const char *e = strstr(p + i, ":]");
                size_t k = e && (size_t)(e - p) < n ? (size_t)(e - p) + 2 : i + 1;
                put(out, p + i, k - i);
                i = k;
                continue;
            }
            depth++;
            put(out, p + i, 1);
            i++;
            if (i < n && p[i] == '^')
                put(out, p + i++, 1);
            if (i < n && p[i] == ']') /* a ']' first in a class is literal */
                put(out, p + i++, 1);
            continue;
        }
        if (c == ']' && depth > 0)
            depth--;
        put(out, p + i, 1);
        i++;
    }
}

fk_status tokenizer_regex_compile(const char *pattern, size_t len, bool literal, const char *what, pcre2_code **out,
                                  fk_error *err)
{
    *out = NULL;
    text t = {0};
    if (literal)
        put(&t, pattern, len);
    else
        translate(pattern, len, &t);
    put(&t, "", 0); /* an empty pattern still gets a buffer */
    if (t.failed) {
        free(t.p);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    int code;
    PCRE2_SIZE offset;
    uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)t.p, t.len, options, &code, &offset, NULL);
    free(t.p);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return fk_error_set(err, FK_ERR_FORMAT, "%s: regex \"%.*s\" does not compile: %s", what,
                            (int)(len < 200 ? len : 200), pattern, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* when JIT is unavailable the interpreter runs instead */
    *out = re;
    return FK_OK;
}

int tokenizer_regex_next(const pcre2_code *re, pcre2_match_data *md, const char *s, size_t len, size_t *at,
                         size_t prev_end, size_t *start, size_t *end, fk_error *err)
{
    for (;;) {
        if (*at > len)
            return 0;
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, *at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            return 0;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "pre-tokenizer regex failed at byte %zu: %s", *at,
                                (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s0 = ov[0], e0 = ov[1] < ov[0] ? ov[0] : ov[1];
        if (s0 == e0 && e0 == prev_end) { /* no empty match right after the last one: step one character */
            size_t step = 1;
            while (*at + step < len && ((unsigned char)s[*at + step] & 0xC0) == 0x80)
                step++;
            *at += step;
            continue;
        }
        *start = s0, *end = e0;
        *at = e0;
        return 1;
    }
}
