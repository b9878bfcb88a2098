/* jinja_lex.c — the chat-template lexer (see jinja_lex.h). It follows jinja2 3.1's Lexer.tokeniter rule for rule:
 * data up to the next `{{`, `{%` or `{#`; `-` after the opening delimiter strips all whitespace before it, `+`
 * keeps it, and otherwise lstrip_blocks removes the spaces between a line start and `{%`/`{#`; `-%}`, `-}}`,
 * `-#}` strip all whitespace after, `%}` and `#}` eat one newline (trim_blocks); inside tags, whitespace,
 * numbers, names, strings and operators, with `%}`/`}}` only closing the tag outside brackets. */
#define _GNU_SOURCE /* memmem */
#include "jinja_lex.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "jinja_str.h"
#include "utf8.h"

typedef struct lexer {
    const char *s; /* normalized source */
    size_t len, pos;
    int line;
    size_t line_pos;      /* position `line` was counted up to */
    jtoken *toks;
    size_t n, cap;
    char *strings;        /* decoded string literals, back to back */
    size_t strings_len, strings_cap;
    char *brackets;       /* the closers expected inside the current tag */
    size_t n_brackets, brackets_cap;
    fk_error *err;
} lexer;

/* The line of position `at` (positions only move forward). */
static int line_at(lexer *lx, size_t at)
{
    for (; lx->line_pos < at; lx->line_pos++)
        lx->line += lx->s[lx->line_pos] == '\n';
    return lx->line;
}

static fk_status fail(lexer *lx, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static fk_status fail(lexer *lx, size_t at, const char *fmt, ...)
{
    char msg[FK_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fk_error_set(lx->err, FK_ERR_FORMAT, "line %d: %s", line_at(lx, at), msg);
}

static fk_status oom(lexer *lx)
{
    return fk_error_set(lx->err, FK_ERR_OUT_OF_MEMORY, "out of memory while reading the template");
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static fk_status emit(lexer *lx, jtok_type type, size_t at, const char *text, size_t len)
{
    if (!grow((void **)&lx->toks, &lx->cap, lx->n + 1, sizeof(jtoken)))
        return oom(lx);
    lx->toks[lx->n++] = (jtoken){.type = type, .line = line_at(lx, at), .text = text, .len = len};
    return FK_OK;
}

/* Python's str.isspace at s[at]; *next: the position after it. */
static bool space_at(const lexer *lx, size_t at, size_t *next)
{
    *next = at;
    return at < lx->len && pystr_isspace(pystr_next(lx->s, next));
}

static size_t skip_space(const lexer *lx, size_t at)
{
    size_t next;
    while (space_at(lx, at, &next))
        at = next;
    return at;
}

static bool starts(const lexer *lx, size_t at, const char *lit)
{
    size_t n = strlen(lit);
    return at + n <= lx->len && memcmp(lx->s + at, lit, n) == 0;
}

/* Emits the data s[from, to) before a tag whose whitespace-control sign is `sign` ('-', '+' or 0); lstrip:
 * the tag is a block or comment (lstrip_blocks applies). */
static fk_status emit_data(lexer *lx, size_t from, size_t to, char sign, bool lstrip)
{
    if (sign == '-') {
        size_t a, b;
        pystr_strip(lx->s + from, to - from, NULL, PYSTR_RIGHT, &a, &b);
        to = from + b;
    } else if (sign != '+' && lstrip) {
        /* Only whitespace between the line's start (or the template's, or a tag that ended a line) and the tag. */
        size_t l = to;
        while (l > from && lx->s[l - 1] != '\n')
            l--;
        bool line_starting = l > from || from == 0 || lx->s[from - 1] == '\n';
        size_t a, b;
        pystr_strip(lx->s + l, to - l, NULL, PYSTR_LEFT, &a, &b);
        if (line_starting && to > l && a == to - l)
            to = l;
    }
    return to > from ? emit(lx, JT_DATA, from, lx->s + from, to - from) : FK_OK;
}

/* ---- inside tags ---- */

/* `(\d+_)*\d+` (or with another digit set): digits, single underscores between them; returns the end. */
static size_t digits(const lexer *lx, size_t at, const char *set)
{
    size_t end = at;
    while (end < lx->len && lx->s[end] && strchr(set, lx->s[end])) {
        end++;
        if (end + 1 < lx->len && lx->s[end] == '_' && lx->s[end + 1] && strchr(set, lx->s[end + 1]))
            end++;
    }
    return end;
}

/* A number at s[at] (a digit): jinja2's float_re, else integer_re. Returns the end (== at: none). */
static size_t number(lexer *lx, size_t at, jtoken *t)
{
    const char *s = lx->s;
    size_t end = 0;
    bool is_float = false;
    if (!(at > 0 && s[at - 1] == '.')) {
        size_t m = digits(lx, at, "0123456789");
        size_t f = m;
        if (f + 1 < lx->len && s[f] == '.' && s[f + 1] >= '0' && s[f + 1] <= '9')
            f = digits(lx, f + 1, "0123456789");
        size_t e = f;
        if (e < lx->len && (s[e] == 'e' || s[e] == 'E')) {
            size_t x = e + 1;
            if (x < lx->len && (s[x] == '+' || s[x] == '-'))
                x++;
            if (x < lx->len && s[x] >= '0' && s[x] <= '9')
                e = digits(lx, x, "0123456789");
        }
        if (e > f || f > m) {
            end = e;
            is_float = true;
        }
    }
    int base = 10;
    size_t body = at;
    if (!is_float) {
        static const struct {
            char prefix;
            const char *set;
            int base;
        } prefixed[] = {{'b', "01", 2}, {'o', "01234567", 8}, {'x', "0123456789abcdefABCDEF", 16}};
        for (int k = 0; k < 3 && !end; k++) {
            if (s[at] != '0' || at + 2 >= lx->len || (s[at + 1] | 0x20) != prefixed[k].prefix)
                continue;
            /* (_?[digit])+ */
            size_t x = at + 2;
            while (x < lx->len) {
                size_t y = x + (s[x] == '_');
                if (y < lx->len && strchr(prefixed[k].set, s[y]) && s[y])
                    x = y + 1;
                else
                    break;
            }
            if (x > at + 2 && s[x - 1] != '_') {
                end = x;
                base = prefixed[k].base;
                body = at + 2;
            }
        }
        if (!end)
            end = s[at] == '0' ? digits(lx, at, "0") : digits(lx, at, "0123456789");
    }
    char buf[128];
    size_t n = 0;
    for (size_t i = body; i < end && n + 1 < sizeof buf; i++)
        if (s[i] != '_')
            buf[n++] = s[i];
    buf[n] = '\0';
    if (end - body >= sizeof buf) {
        fail(lx, at, "number literal too long");
        return at;
    }
    errno = 0;
    if (is_float) {
        t->type = JT_FLOAT;
        t->f = strtod(buf, NULL);
    } else {
        t->type = JT_INT;
        t->i = strtoll(buf, NULL, base);
        if (errno) {
            fail(lx, at, "integer literal %s is out of range", buf);
            return at;
        }
    }
    return end;
}

static fk_status put_string(lexer *lx, const char *s, size_t n)
{
    if (!grow((void **)&lx->strings, &lx->strings_cap, lx->strings_len + n + 1, 1))
        return oom(lx);
    memcpy(lx->strings + lx->strings_len, s, n);
    lx->strings_len += n;
    return FK_OK;
}

static fk_status put_cp(lexer *lx, uint32_t cp)
{
    char enc[4];
    return put_string(lx, enc, (size_t)utf8_put(cp, enc));
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
}

/* A string literal's escapes as Python's unicode-escape codec decodes them after jinja2 has backslash-replaced
 * the non-ASCII characters: \n \t \xHH \uHHHH \ooo and the like; unknown escapes stay as they are. */
static fk_status decode_string(lexer *lx, size_t at, size_t from, size_t to)
{
    const char *s = lx->s;
    for (size_t i = from; i < to;) {
        if (s[i] != '\\') {
            size_t j = i + 1;
            while (j < to && s[j] != '\\')
                j++;
            fk_status st = put_string(lx, s + i, j - i);
            if (st)
                return st;
            i = j;
            continue;
        }
        char c = s[i + 1];
        i += 2;
        static const char simple_from[] = "\\'\"abfnrtv", simple_to[] = "\\'\"\a\b\f\n\r\t\v";
        const char *k = strchr(simple_from, c);
        fk_status st = FK_OK;
        if (c == '\n') {
            continue;
        } else if (k && c) {
            st = put_string(lx, simple_to + (k - simple_from), 1);
        } else if (c >= '0' && c <= '7') {
            uint32_t v = (uint32_t)(c - '0');
            for (int n = 1; n < 3 && i < to && s[i] >= '0' && s[i] <= '7'; n++)
                v = v * 8 + (uint32_t)(s[i++] - '0');
            st = put_cp(lx, v);
        } else if (c == 'x' || c == 'u' || c == 'U') {
            int need = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int n = 0; n < need; n++) {
                int h = i < to ? hex_value(s[i]) : -1;
                if (h < 0)
                    return fail(lx, at, "truncated \\%s escape", c == 'x' ? "xXX" : c == 'u' ? "uXXXX" : "UXXXXXXXX");
                v = v * 16 + (uint32_t)h;
                i++;
            }
            if (v > 0x10FFFF)
                return fail(lx, at, "illegal Unicode character");
            if (v >= 0xD800 && v <= 0xDFFF)
                return fail(lx, at, "surrogate \\u%04x in a string literal is not supported", v);
            st = put_cp(lx, v);
        } else if (c == 'N') {
            return fail(lx, at, "\\N{...} escapes are not supported");
        } else if ((unsigned char)c >= 0x80) {
            /* A backslash before a non-ASCII character: Python sees "\\" then the character's "xe9"-style text. */
            size_t j = i - 1;
            uint32_t cp = pystr_next(s, &j);
            char esc[16];
            int n = snprintf(esc, sizeof esc, cp <= 0xff ? "\\x%02x" : cp <= 0xffff ? "\\u%04x" : "\\U%08x", cp);
            st = put_string(lx, esc, (size_t)n);
            i = j;
        } else {
            char keep[2] = {'\\', c};
            st = put_string(lx, keep, 2);
        }
        if (st)
            return st;
    }
    return FK_OK;
}

/* A string literal at s[at] (a quote); returns its end, or at when it is unterminated. */
static size_t string_literal(lexer *lx, size_t at, jtoken *t, fk_status *st)
{
    char q = lx->s[at];
    size_t i = at + 1;
    while (i < lx->len && lx->s[i] != q)
        i += lx->s[i] == '\\' && i + 1 < lx->len ? 2 : 1;
    if (i >= lx->len)
        return at;
    size_t off = lx->strings_len;
    *st = decode_string(lx, at, at + 1, i);
    t->type = JT_STRING;
    t->text = NULL;
    t->i = (int64_t)off; /* resolved to a pointer once all strings are in */
    t->len = lx->strings_len - off;
    return i + 1;
}

static const struct {
    const char *text;
    jop op;
} operators[] = {
    {"//", JOP_FLOORDIV}, {"**", JOP_POW},   {"==", JOP_EQ},       {"!=", JOP_NE},       {">=", JOP_GTEQ},
    {"<=", JOP_LTEQ},     {"+", JOP_ADD},    {"-", JOP_SUB},       {"/", JOP_DIV},       {"*", JOP_MUL},
    {"%", JOP_MOD},       {"~", JOP_TILDE},  {"[", JOP_LBRACKET},  {"]", JOP_RBRACKET},  {"(", JOP_LPAREN},
    {")", JOP_RPAREN},    {"{", JOP_LBRACE}, {"}", JOP_RBRACE},    {">", JOP_GT},        {"<", JOP_LT},
    {"=", JOP_ASSIGN},    {".", JOP_DOT},    {":", JOP_COLON},     {"|", JOP_PIPE},      {",", JOP_COMMA},
    {";", JOP_SEMICOLON},
};

const char *jinja_op_text(jop op)
{
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++)
        if (operators[i].op == op)
            return operators[i].text;
    return "?";
}

/* Tracks (), [] and {} so that `}}` and `%}` inside them are operators, as jinja2's balancing stack does. */
static fk_status balance(lexer *lx, size_t at, jop op)
{
    char open = op == JOP_LPAREN ? ')' : op == JOP_LBRACKET ? ']' : op == JOP_LBRACE ? '}' : 0;
    if (open) {
        if (!grow((void **)&lx->brackets, &lx->brackets_cap, lx->n_brackets + 1, 1))
            return oom(lx);
        lx->brackets[lx->n_brackets++] = open;
        return FK_OK;
    }
    char close = op == JOP_RPAREN ? ')' : op == JOP_RBRACKET ? ']' : op == JOP_RBRACE ? '}' : 0;
    if (!close)
        return FK_OK;
    if (lx->n_brackets == 0)
        return fail(lx, at, "unexpected '%c'", close);
    char want = lx->brackets[--lx->n_brackets];
    if (want != close)
        return fail(lx, at, "unexpected '%c', expected '%c'", close, want);
    return FK_OK;
}

/* The tokens of a tag from s[at] up to and including its end; variable: `}}` ends it, else `%}`. Returns the
 * position after the end (and its trim). */
static fk_status tag(lexer *lx, size_t at, bool variable, size_t *end)
{
    const char *s = lx->s;
    lx->n_brackets = 0;
    for (;;) {
        if (at >= lx->len)
            return fail(lx, at, "unexpected end of template: missing '%s'", variable ? "}}" : "%}");
        if (lx->n_brackets == 0) {
            const char *close = variable ? "}}" : "%}";
            if ((s[at] == '-' || (s[at] == '+' && !variable)) && starts(lx, at + 1, close)) {
                fk_status st = emit(lx, variable ? JT_VAR_END : JT_BLOCK_END, at, NULL, 0);
                *end = s[at] == '-' ? skip_space(lx, at + 3) : at + 3;
                return st;
            }
            if (starts(lx, at, close)) {
                fk_status st = emit(lx, variable ? JT_VAR_END : JT_BLOCK_END, at, NULL, 0);
                at += 2;
                *end = !variable && at < lx->len && s[at] == '\n' ? at + 1 : at; /* trim_blocks */
                return st;
            }
        }
        size_t next;
        if (space_at(lx, at, &next)) {
            at = skip_space(lx, at);
            continue;
        }
        jtoken t = {.line = line_at(lx, at)};
        fk_status st = FK_OK;
        char c = s[at];
        if (c >= '0' && c <= '9') {
            next = number(lx, at, &t);
            if (next == at)
                return lx->err->status;
        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? true : c == '_') {
            next = at + 1;
            while (next < lx->len && (s[next] == '_' || (s[next] >= '0' && s[next] <= '9') ||
                                      ((s[next] | 0x20) >= 'a' && (s[next] | 0x20) <= 'z')))
                next++;
            t.type = JT_NAME;
            t.text = s + at;
            t.len = next - at;
        } else if ((c == '\'' || c == '"') && (next = string_literal(lx, at, &t, &st)) > at) {
            if (st)
                return st;
        } else {
            next = at;
            for (size_t k = 0; k < sizeof operators / sizeof operators[0]; k++)
                if (starts(lx, at, operators[k].text)) {
                    t.type = JT_OP;
                    t.op = operators[k].op;
                    next = at + strlen(operators[k].text);
                    if ((st = balance(lx, at, t.op)))
                        return st;
                    break;
                }
            if (next == at) {
                size_t after = at;
                uint32_t cp = pystr_next(s, &after);
                char enc[5] = {0};
                utf8_put(cp, enc);
                return fail(lx, at, "unexpected char '%s'", enc);
            }
        }
        if (!grow((void **)&lx->toks, &lx->cap, lx->n + 1, sizeof(jtoken)))
            return oom(lx);
        lx->toks[lx->n++] = t;
        at = next;
    }
}

/* A comment from s[at] (after `{#` and its sign): up to `#}`; returns the position after it (and its trim). */
static fk_status comment(lexer *lx, size_t at, size_t *end)
{
    const char *p = at <= lx->len ? memmem(lx->s + at, lx->len - at, "#}", 2) : NULL;
    if (!p)
        return fail(lx, at, "missing end of comment tag");
    size_t close = (size_t)(p - lx->s);
    char sign = close > at && (lx->s[close - 1] == '-' || lx->s[close - 1] == '+') ? lx->s[close - 1] : 0;
    close += 2;
    *end = sign == '-' ? skip_space(lx, close) : !sign && close < lx->len && lx->s[close] == '\n' ? close + 1 : close;
    return FK_OK;
}

/* `{% raw %}` at s[at]: its length (0 when it is not one). */
static size_t raw_begin(const lexer *lx, size_t at)
{
    size_t i = at + 2;
    if (i < lx->len && (lx->s[i] == '-' || lx->s[i] == '+'))
        i++;
    i = skip_space(lx, i);
    if (!starts(lx, i, "raw"))
        return 0;
    i = skip_space(lx, i + 3);
    if (starts(lx, i, "-%}"))
        return skip_space(lx, i + 3) - at;
    return starts(lx, i, "%}") ? i + 2 - at : 0;
}

/* The text of a raw block from s[at] up to `{% endraw %}`, emitted as data; *end: after the end tag. */
static fk_status raw_body(lexer *lx, size_t at, size_t *end)
{
    for (size_t p = at; p + 1 < lx->len; p++) {
        if (lx->s[p] != '{' || lx->s[p + 1] != '%')
            continue;
        size_t i = p + 2;
        char sign = i < lx->len && (lx->s[i] == '-' || lx->s[i] == '+') ? lx->s[i++] : 0;
        i = skip_space(lx, i);
        if (!starts(lx, i, "endraw"))
            continue;
        i = skip_space(lx, i + 6);
        if (starts(lx, i, "+%}"))
            *end = i + 3;
        else if (starts(lx, i, "-%}"))
            *end = skip_space(lx, i + 3);
        else if (starts(lx, i, "%}"))
            *end = i + 2 < lx->len && lx->s[i + 2] == '\n' ? i + 3 : i + 2;
        else
            continue;
        return emit_data(lx, at, p, sign, true);
    }
    return fail(lx, at, "missing end of raw directive");
}

static fk_status run(lexer *lx)
{
    const char *s = lx->s;
    size_t pos = 0;
    while (pos < lx->len) {
        size_t p = pos;
        while (p + 1 < lx->len && !(s[p] == '{' && (s[p + 1] == '{' || s[p + 1] == '%' || s[p + 1] == '#')))
            p++;
        if (p + 1 >= lx->len)
            return emit(lx, JT_DATA, pos, s + pos, lx->len - pos);
        char kind = s[p + 1];
        size_t raw = kind == '%' ? raw_begin(lx, p) : 0;
        char sign = p + 2 < lx->len && (s[p + 2] == '-' || s[p + 2] == '+') ? s[p + 2] : 0;
        fk_status st = emit_data(lx, pos, p, sign, kind != '{');
        if (st)
            return st;
        size_t after = p + 2 + (sign != 0);
        if (raw)
            st = raw_body(lx, p + raw, &pos);
        else if (kind == '#')
            st = comment(lx, after, &pos);
        else if ((st = emit(lx, kind == '{' ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, p, NULL, 0)) == FK_OK)
            st = tag(lx, after, kind == '{', &pos);
        if (st)
            return st;
    }
    return FK_OK;
}

fk_status jinja_lex(const char *src, size_t len, jlexed *out, fk_error *err)
{
    *out = (jlexed){0};
    /* jinja2 first turns \r\n and \r into \n and drops one trailing newline (keep_trailing_newline=False). */
    char *s = malloc(len + 1);
    if (!s)
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory while reading the template");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n > 0 && s[n - 1] == '\n')
        n--;
    s[n] = '\0';
    lexer lx = {.s = s, .len = n, .line = 1, .err = err};
    fk_status st = run(&lx);
    if (!st)
        st = emit(&lx, JT_EOF, n, NULL, 0);
    free(lx.brackets);
    out->toks = lx.toks;
    out->n = lx.n;
    out->source = s;
    out->strings = lx.strings;
    if (st) {
        jinja_lex_free(out);
        return st;
    }
    for (size_t i = 0; i < lx.n; i++)
        if (lx.toks[i].type == JT_STRING)
            lx.toks[i].text = lx.strings ? lx.strings + lx.toks[i].i : "";
    return FK_OK;
}

void jinja_lex_free(jlexed *lx)
{
    free(lx->toks);
    free(lx->source);
    free(lx->strings);
    *lx = (jlexed){0};
}
