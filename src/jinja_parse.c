/* jinja_parse.c — the chat-template parser: tokens to statements and expressions, following jinja2 3.1's Parser
 * function for function (precedence, tuples, tests without parentheses, filters binding tighter than operators),
 * with transformers' extensions (loop controls, {% generation %}). Unknown or unsupported filters, tests and tags
 * are refused here, naming the construct and the line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "jinja.h"
#include "jinja_ast.h"
#include "jinja_filter.h"
#include "jinja_lex.h"
#include "utf8.h"

struct jarena {
    jarena *next;
    size_t used, cap;
    _Alignas(16) char data[];
};

typedef struct parser {
    const jtoken *t;
    size_t pos;
    jinja_template *tmpl;
    size_t consts_cap;
    fk_error *err;
    int depth, max_depth;
    int loops;            /* for loops around the statement being parsed (break/continue need one) */
    bool failed;
} parser;

static void *alloc(parser *p, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    jarena *a = p->tmpl->arena;
    if (!a || a->cap - a->used < size) {
        size_t cap = size > 16384 ? size : 16384;
        jarena *b = malloc(sizeof *b + cap);
        if (!b) {
            if (!p->failed)
                fk_error_set(p->err, FK_ERR_OUT_OF_MEMORY, "out of memory while parsing the template");
            p->failed = true;
            return NULL;
        }
        *b = (jarena){.next = a, .cap = cap};
        p->tmpl->arena = a = b;
    }
    void *r = a->data + a->used;
    a->used += size;
    memset(r, 0, size);
    return r;
}

static void fail(parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(parser *p, int line, const char *fmt, ...)
{
    if (p->failed)
        return;
    char msg[FK_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fk_error_set(p->err, FK_ERR_FORMAT, "line %d: %s", line, msg);
    p->failed = true;
}

static const jtoken *cur(const parser *p)
{
    return &p->t[p->pos];
}

static const jtoken *look(const parser *p)
{
    return p->t[p->pos].type == JT_EOF ? &p->t[p->pos] : &p->t[p->pos + 1];
}

static void next(parser *p)
{
    if (p->t[p->pos].type != JT_EOF)
        p->pos++;
}

static bool is_name(const jtoken *t, const char *name)
{
    return t->type == JT_NAME && t->len == strlen(name) && memcmp(t->text, name, t->len) == 0;
}

static bool is_op(const jtoken *t, jop op)
{
    return t->type == JT_OP && t->op == op;
}

static bool skip_name(parser *p, const char *name)
{
    if (!is_name(cur(p), name))
        return false;
    next(p);
    return true;
}

static bool skip_op(parser *p, jop op)
{
    if (!is_op(cur(p), op))
        return false;
    next(p);
    return true;
}

/* What a token is, for messages. */
static const char *describe(const jtoken *t, char buf[64])
{
    switch (t->type) {
    case JT_DATA: return "template data";
    case JT_VAR_BEGIN: return "'{{'";
    case JT_VAR_END: return "'}}'";
    case JT_BLOCK_BEGIN: return "'{%'";
    case JT_BLOCK_END: return "'%}'";
    case JT_NAME: snprintf(buf, 64, "'%.*s'", (int)(t->len < 40 ? t->len : 40), t->text); return buf;
    case JT_STRING: return "string";
    case JT_INT: return "integer";
    case JT_FLOAT: return "float";
    case JT_OP: snprintf(buf, 64, "'%s'", jinja_op_text(t->op)); return buf;
    case JT_EOF: return "end of template";
    }
    return "token";
}

static void unexpected(parser *p, const char *wanted)
{
    char buf[64];
    if (wanted)
        fail(p, cur(p)->line, "expected %s, got %s", wanted, describe(cur(p), buf));
    else
        fail(p, cur(p)->line, "unexpected %s", describe(cur(p), buf));
}

static bool expect_op(parser *p, jop op)
{
    if (skip_op(p, op))
        return true;
    char want[16];
    snprintf(want, sizeof want, "'%s'", jinja_op_text(op));
    unexpected(p, want);
    return false;
}

static bool expect_type(parser *p, jtok_type type, const char *what)
{
    if (cur(p)->type == type) {
        next(p);
        return true;
    }
    unexpected(p, what);
    return false;
}

static char *copy_text(parser *p, const char *s, size_t len)
{
    char *r = alloc(p, len + 1);
    if (r)
        memcpy(r, s, len);
    return r;
}

/* The current name token's text (NUL-terminated, in the arena), consumed; NULL after failing when it is not a
 * name. */
static const char *expect_name(parser *p)
{
    if (cur(p)->type != JT_NAME) {
        unexpected(p, "a name");
        return NULL;
    }
    const char *r = copy_text(p, cur(p)->text, cur(p)->len);
    next(p);
    return r;
}

/* Nesting guard around the recursive rules: deep nesting is refused instead of overflowing the stack. */
static bool enter(parser *p)
{
    if (p->depth >= p->max_depth) {
        fail(p, cur(p)->line, "the template nests more than %d levels deep", p->max_depth);
        return false;
    }
    p->depth++;
    return true;
}

static jexpr *node(parser *p, jexpr_kind kind, int line, int n_args)
{
    jexpr *e = alloc(p, sizeof *e);
    if (!e)
        return NULL;
    e->kind = kind;
    e->line = line;
    e->n_args = n_args;
    if (n_args && !(e->args = alloc(p, (size_t)n_args * sizeof *e->args)))
        return NULL;
    return e;
}

static jexpr *node2(parser *p, jexpr_kind kind, int line, jexpr *a, jexpr *b)
{
    if (!a || !b)
        return NULL;
    jexpr *e = node(p, kind, line, 2);
    if (e) {
        e->args[0] = a;
        e->args[1] = b;
    }
    return e;
}

/* A growable list of expressions being parsed. */
typedef struct exprs {
    jexpr **v;
    int n, cap;
} exprs;

static bool push(parser *p, exprs *l, jexpr *e)
{
    if (!e)
        return false;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        jexpr **v = alloc(p, (size_t)cap * sizeof *v);
        if (!v)
            return false;
        if (l->n)
            memcpy(v, l->v, (size_t)l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = e;
    return true;
}

static jexpr *parse_expression(parser *p, bool with_condexpr);
static jexpr *parse_unary(parser *p, bool with_filter);
static jexpr *parse_postfix(parser *p, jexpr *e);
static jexpr *parse_primary(parser *p, bool with_namespace);

static bool tuple_end(const parser *p, const char *const *extra_end)
{
    const jtoken *t = cur(p);
    if (t->type == JT_VAR_END || t->type == JT_BLOCK_END || is_op(t, JOP_RPAREN))
        return true;
    for (; extra_end && *extra_end; extra_end++)
        if (is_name(t, *extra_end))
            return true;
    return false;
}

/* jinja2's parse_tuple: an expression, or a tuple of them when commas follow (a trailing comma is allowed). */
static jexpr *parse_tuple(parser *p, bool simplified, bool with_condexpr, const char *const *extra_end,
                          bool explicit_parentheses, bool with_namespace)
{
    int line = cur(p)->line;
    exprs items = {0};
    bool is_tuple = false;
    for (;;) {
        if (items.n && !expect_op(p, JOP_COMMA))
            return NULL;
        if (tuple_end(p, extra_end))
            break;
        if (!push(p, &items,
                  simplified ? parse_primary(p, with_namespace) : parse_expression(p, with_condexpr)))
            return NULL;
        if (is_op(cur(p), JOP_COMMA))
            is_tuple = true;
        else
            break;
    }
    if (!is_tuple) {
        if (items.n)
            return items.v[0];
        if (!explicit_parentheses) {
            unexpected(p, "an expression");
            return NULL;
        }
    }
    jexpr *e = node(p, JE_TUPLE, line, 0);
    if (e) {
        e->args = items.v;
        e->n_args = items.n;
    }
    return e;
}

/* Arguments of a call, filter or test: positional, then name=value; *args and **kwargs are refused. */
static bool parse_call_args(parser *p, jexpr *e, int first)
{
    int line = cur(p)->line;
    if (!expect_op(p, JOP_LPAREN))
        return false;
    exprs args = {0}, kw = {0};
    const char **names = NULL;
    int names_cap = 0;
    for (int i = first; i-- > 0;)
        if (!push(p, &args, e->args[first - 1 - i]))
            return false;
    bool need_comma = false;
    while (!is_op(cur(p), JOP_RPAREN)) {
        if (need_comma) {
            if (!expect_op(p, JOP_COMMA))
                return false;
            if (is_op(cur(p), JOP_RPAREN))
                break;
        }
        if (is_op(cur(p), JOP_MUL) || is_op(cur(p), JOP_POW)) {
            fail(p, cur(p)->line, "*args and **kwargs in calls are not supported");
            return false;
        }
        if (cur(p)->type == JT_NAME && is_op(look(p), JOP_ASSIGN)) {
            const char *name = expect_name(p);
            next(p);
            if (!name || !push(p, &kw, parse_expression(p, true)))
                return false;
            if (kw.n > names_cap) {
                names_cap = kw.cap;
                const char **v = alloc(p, (size_t)names_cap * sizeof *v);
                if (!v)
                    return false;
                if (kw.n > 1)
                    memcpy(v, names, (size_t)(kw.n - 1) * sizeof *v);
                names = v;
            }
            names[kw.n - 1] = name;
        } else {
            if (kw.n) {
                fail(p, line, "invalid syntax for function call expression");
                return false;
            }
            if (!push(p, &args, parse_expression(p, true)))
                return false;
        }
        need_comma = true;
    }
    if (!expect_op(p, JOP_RPAREN))
        return false;
    e->args = args.v;
    e->n_args = args.n;
    e->kw = kw.v;
    e->kw_names = names;
    e->n_kw = kw.n;
    return true;
}

/* A filter or test name, dotted names included (which no builtin has). */
static const char *dotted_name(parser *p)
{
    const char *name = expect_name(p);
    while (name && is_op(cur(p), JOP_DOT)) {
        next(p);
        const char *part = expect_name(p);
        if (!part)
            return NULL;
        size_t a = strlen(name), b = strlen(part);
        char *joined = alloc(p, a + b + 2);
        if (!joined)
            return NULL;
        memcpy(joined, name, a);
        joined[a] = '.';
        memcpy(joined + a + 1, part, b);
        name = joined;
    }
    return name;
}

/* `| name(args)` applied to e (NULL in filter blocks), repeated while pipes follow. start_inline: the first
 * name comes without a pipe. */
static jexpr *parse_filter(parser *p, jexpr *e, bool start_inline)
{
    while (is_op(cur(p), JOP_PIPE) || start_inline) {
        if (!start_inline)
            next(p);
        start_inline = false;
        int line = cur(p)->line;
        const char *name = dotted_name(p);
        if (!name)
            return NULL;
        int id = jinja_filter_find(name);
        if (id < 0) {
            fail(p, line, jinja_filter_is_builtin(name) ? "filter '%s' is not supported" : "unknown filter '%s'",
                 name);
            return NULL;
        }
        jexpr *f = node(p, JE_FILTER, line, 1);
        if (!f)
            return NULL;
        f->args[0] = e;
        f->name = name;
        f->builtin = id;
        if (is_op(cur(p), JOP_LPAREN) && !parse_call_args(p, f, 1))
            return NULL;
        e = f;
    }
    return e;
}

static jexpr *parse_test(parser *p, jexpr *e)
{
    int line = cur(p)->line;
    next(p); /* is */
    bool negated = skip_name(p, "not");
    const char *name = dotted_name(p);
    if (!name)
        return NULL;
    int id = jinja_test_find(name);
    if (id < 0) {
        fail(p, line, "unknown test '%s'", name);
        return NULL;
    }
    jexpr *t = node(p, JE_TEST, line, 1);
    if (!t)
        return NULL;
    t->args[0] = e;
    t->name = name;
    t->builtin = id;
    const jtoken *c = cur(p);
    if (is_op(c, JOP_LPAREN)) {
        if (!parse_call_args(p, t, 1))
            return NULL;
    } else if ((c->type == JT_NAME || c->type == JT_STRING || c->type == JT_INT || c->type == JT_FLOAT ||
                is_op(c, JOP_LBRACKET) || is_op(c, JOP_LBRACE)) &&
               !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
        /* `x is divisibleby 3`: one argument without parentheses. */
        if (is_name(c, "is")) {
            fail(p, c->line, "You cannot chain multiple tests with is");
            return NULL;
        }
        jexpr *arg = parse_postfix(p, parse_primary(p, false));
        if (!arg)
            return NULL;
        jexpr **args = alloc(p, 2 * sizeof *args);
        if (!args)
            return NULL;
        args[0] = e;
        args[1] = arg;
        t->args = args;
        t->n_args = 2;
    }
    if (!negated)
        return t;
    jexpr *n = node(p, JE_NOT, line, 1);
    if (n)
        n->args[0] = t;
    return n;
}

/* What follows `[`: an expression or a slice a:b:c (each part optional). */
static jexpr *parse_subscribed(parser *p)
{
    int line = cur(p)->line;
    jexpr *parts[3] = {NULL, NULL, NULL};
    if (!is_op(cur(p), JOP_COLON)) {
        jexpr *e = parse_expression(p, true);
        if (!e || !is_op(cur(p), JOP_COLON))
            return e;
        parts[0] = e;
    }
    next(p); /* : */
    if (!is_op(cur(p), JOP_COLON) && !is_op(cur(p), JOP_RBRACKET) && !is_op(cur(p), JOP_COMMA))
        if (!(parts[1] = parse_expression(p, true)))
            return NULL;
    if (skip_op(p, JOP_COLON))
        if (!is_op(cur(p), JOP_RBRACKET) && !is_op(cur(p), JOP_COMMA))
            if (!(parts[2] = parse_expression(p, true)))
                return NULL;
    jexpr *s = node(p, JE_SLICE, line, 4);
    if (s)
        for (int i = 0; i < 3; i++)
            s->args[i + 1] = parts[i];
    return s;
}

static jexpr *parse_subscript(parser *p, jexpr *e)
{
    const jtoken *t = cur(p);
    int line = t->line;
    next(p);
    if (t->type == JT_OP && t->op == JOP_DOT) {
        const jtoken *a = cur(p);
        if (a->type == JT_NAME) {
            jexpr *g = node(p, JE_GETATTR, line, 1);
            if (!g || !(g->name = expect_name(p)))
                return NULL;
            g->args[0] = e;
            return g;
        }
        if (a->type != JT_INT) {
            unexpected(p, "a name or number");
            return NULL;
        }
        jexpr *k = node(p, JE_CONST, a->line, 0);
        if (!k)
            return NULL;
        k->value = jv_int(a->i);
        next(p);
        return node2(p, JE_GETITEM, line, e, k);
    }
    exprs args = {0};
    while (!is_op(cur(p), JOP_RBRACKET)) {
        if (args.n && !expect_op(p, JOP_COMMA))
            return NULL;
        if (!push(p, &args, parse_subscribed(p)))
            return NULL;
    }
    if (!expect_op(p, JOP_RBRACKET))
        return NULL;
    if (args.n != 1) {
        fail(p, line, "subscripts with several indexes are not supported");
        return NULL;
    }
    if (args.v[0]->kind == JE_SLICE) {
        args.v[0]->args[0] = e;
        return args.v[0];
    }
    return node2(p, JE_GETITEM, line, e, args.v[0]);
}

static jexpr *parse_call(parser *p, jexpr *callee)
{
    jexpr *c = node(p, JE_CALL, cur(p)->line, 1);
    if (!c)
        return NULL;
    c->args[0] = callee;
    return parse_call_args(p, c, 1) ? c : NULL;
}

static jexpr *parse_postfix(parser *p, jexpr *e)
{
    while (e) {
        if (is_op(cur(p), JOP_DOT) || is_op(cur(p), JOP_LBRACKET))
            e = parse_subscript(p, e);
        else if (is_op(cur(p), JOP_LPAREN))
            e = parse_call(p, e);
        else
            break;
    }
    return e;
}

static jexpr *parse_filter_expr(parser *p, jexpr *e)
{
    while (e) {
        if (is_op(cur(p), JOP_PIPE))
            e = parse_filter(p, e, false);
        else if (is_name(cur(p), "is"))
            e = parse_test(p, e);
        else if (is_op(cur(p), JOP_LPAREN))
            e = parse_call(p, e);
        else
            break;
    }
    return e;
}

static jstr *intern_string(parser *p, const char *s, size_t len)
{
    jinja_template *t = p->tmpl;
    if (t->n_consts == p->consts_cap) {
        size_t cap = p->consts_cap ? p->consts_cap * 2 : 16;
        jstr **v = realloc(t->consts, cap * sizeof *v);
        if (!v)
            return NULL;
        t->consts = v;
        p->consts_cap = cap;
    }
    jstr *j = jstr_immortal(s, len);
    if (j)
        t->consts[t->n_consts++] = j;
    return j;
}

static jexpr *parse_list_or_dict(parser *p, bool dict)
{
    int line = cur(p)->line;
    next(p);
    jop close = dict ? JOP_RBRACE : JOP_RBRACKET;
    exprs items = {0};
    while (!is_op(cur(p), close)) {
        if (items.n && !expect_op(p, JOP_COMMA))
            return NULL;
        if (is_op(cur(p), close))
            break;
        if (!push(p, &items, parse_expression(p, true)))
            return NULL;
        if (dict && (!expect_op(p, JOP_COLON) || !push(p, &items, parse_expression(p, true))))
            return NULL;
    }
    if (!expect_op(p, close))
        return NULL;
    jexpr *e = node(p, dict ? JE_DICT : JE_LIST, line, 0);
    if (e) {
        e->args = items.v;
        e->n_args = items.n;
    }
    return e;
}

static jexpr *parse_primary(parser *p, bool with_namespace)
{
    const jtoken *t = cur(p);
    jexpr *e;
    switch (t->type) {
    case JT_NAME:
        if (is_name(t, "true") || is_name(t, "True") || is_name(t, "false") || is_name(t, "False") ||
            is_name(t, "none") || is_name(t, "None")) {
            if (!(e = node(p, JE_CONST, t->line, 0)))
                return NULL;
            e->value = t->text[0] == 'n' || t->text[0] == 'N' ? jv_none() : jv_bool(t->text[0] == 't' || t->text[0] == 'T');
            next(p);
            return e;
        }
        if (with_namespace && is_op(look(p), JOP_DOT)) {
            if (!(e = node(p, JE_NSREF, t->line, 0)) || !(e->name = expect_name(p)))
                return NULL;
            next(p);
            return (e->attr = expect_name(p)) ? e : NULL;
        }
        if (!(e = node(p, JE_NAME, t->line, 0)))
            return NULL;
        e->name = expect_name(p);
        return e->name ? e : NULL;
    case JT_STRING: {
        /* Adjacent literals concatenate: "a" "b". */
        size_t total = 0, start = p->pos;
        for (; cur(p)->type == JT_STRING; next(p))
            total += cur(p)->len;
        char *buf = malloc(total + 1);
        if (!buf) {
            fail(p, t->line, "out of memory");
            return NULL;
        }
        size_t at = 0;
        for (size_t i = start; i < p->pos; i++) {
            memcpy(buf + at, p->t[i].text, p->t[i].len);
            at += p->t[i].len;
        }
        jstr *s = intern_string(p, buf, total);
        free(buf);
        if (!s || !(e = node(p, JE_CONST, t->line, 0))) {
            fail(p, t->line, "out of memory");
            return NULL;
        }
        e->value = (jv){.type = JV_STR, .u.s = s};
        return e;
    }
    case JT_INT:
    case JT_FLOAT:
        if (!(e = node(p, JE_CONST, t->line, 0)))
            return NULL;
        e->value = t->type == JT_INT ? jv_int(t->i) : jv_float(t->f);
        next(p);
        return e;
    case JT_OP:
        if (t->op == JOP_LPAREN) {
            next(p);
            e = parse_tuple(p, false, true, NULL, true, false);
            return e && expect_op(p, JOP_RPAREN) ? e : NULL;
        }
        if (t->op == JOP_LBRACKET || t->op == JOP_LBRACE)
            return parse_list_or_dict(p, t->op == JOP_LBRACE);
        break;
    default: break;
    }
    unexpected(p, NULL);
    return NULL;
}

static jexpr *parse_unary(parser *p, bool with_filter)
{
    if (!enter(p))
        return NULL;
    const jtoken *t = cur(p);
    jexpr *e;
    if (is_op(t, JOP_SUB) || is_op(t, JOP_ADD)) {
        next(p);
        jexpr *operand = parse_unary(p, false);
        if (!operand || !(e = node(p, t->op == JOP_SUB ? JE_NEG : JE_POS, t->line, 1))) {
            p->depth--;
            return NULL;
        }
        e->args[0] = operand;
    } else {
        e = parse_primary(p, false);
    }
    e = parse_postfix(p, e);
    if (with_filter)
        e = parse_filter_expr(p, e);
    p->depth--;
    return e;
}

static jexpr *parse_pow(parser *p)
{
    jexpr *e = parse_unary(p, true);
    while (e && is_op(cur(p), JOP_POW)) {
        int line = cur(p)->line;
        next(p);
        if ((e = node2(p, JE_BINOP, line, e, parse_unary(p, true))))
            e->op = JOP_POW;
    }
    return e;
}

static jexpr *parse_math2(parser *p)
{
    jexpr *e = parse_pow(p);
    while (e && (is_op(cur(p), JOP_MUL) || is_op(cur(p), JOP_DIV) || is_op(cur(p), JOP_FLOORDIV) ||
                 is_op(cur(p), JOP_MOD))) {
        const jtoken *t = cur(p);
        next(p);
        if ((e = node2(p, JE_BINOP, t->line, e, parse_pow(p))))
            e->op = t->op;
    }
    return e;
}

static jexpr *parse_concat(parser *p)
{
    int line = cur(p)->line;
    exprs items = {0};
    if (!push(p, &items, parse_math2(p)))
        return NULL;
    while (skip_op(p, JOP_TILDE))
        if (!push(p, &items, parse_math2(p)))
            return NULL;
    if (items.n == 1)
        return items.v[0];
    jexpr *e = node(p, JE_CONCAT, line, 0);
    if (e) {
        e->args = items.v;
        e->n_args = items.n;
    }
    return e;
}

static jexpr *parse_math1(parser *p)
{
    jexpr *e = parse_concat(p);
    while (e && (is_op(cur(p), JOP_ADD) || is_op(cur(p), JOP_SUB))) {
        const jtoken *t = cur(p);
        next(p);
        if ((e = node2(p, JE_BINOP, t->line, e, parse_concat(p))))
            e->op = t->op;
    }
    return e;
}

static jexpr *parse_compare(parser *p)
{
    int line = cur(p)->line;
    exprs operands = {0};
    jcmp cmps[64];
    if (!push(p, &operands, parse_math1(p)))
        return NULL;
    for (;;) {
        const jtoken *t = cur(p);
        jcmp c;
        if (t->type == JT_OP && t->op >= JOP_EQ && t->op <= JOP_LTEQ) {
            static const jcmp by_op[] = {JC_EQ, JC_NE, JC_GT, JC_GE, JC_LT, JC_LE};
            c = by_op[t->op - JOP_EQ];
            next(p);
        } else if (is_name(t, "in")) {
            c = JC_IN;
            next(p);
        } else if (is_name(t, "not") && is_name(look(p), "in")) {
            c = JC_NOTIN;
            next(p);
            next(p);
        } else {
            break;
        }
        if (operands.n > 64) {
            fail(p, t->line, "more than 64 chained comparisons");
            return NULL;
        }
        cmps[operands.n - 1] = c;
        if (!push(p, &operands, parse_math1(p)))
            return NULL;
    }
    if (operands.n == 1)
        return operands.v[0];
    jexpr *e = node(p, JE_COMPARE, line, 0);
    if (!e || !(e->cmps = alloc(p, (size_t)(operands.n - 1) * sizeof *e->cmps)))
        return NULL;
    memcpy(e->cmps, cmps, (size_t)(operands.n - 1) * sizeof *cmps);
    e->args = operands.v;
    e->n_args = operands.n;
    return e;
}

static jexpr *parse_not(parser *p)
{
    if (!is_name(cur(p), "not"))
        return parse_compare(p);
    int line = cur(p)->line;
    next(p);
    if (!enter(p))
        return NULL;
    jexpr *operand = parse_not(p);
    p->depth--;
    jexpr *e = operand ? node(p, JE_NOT, line, 1) : NULL;
    if (e)
        e->args[0] = operand;
    return e;
}

static jexpr *parse_and(parser *p)
{
    jexpr *e = parse_not(p);
    while (e && is_name(cur(p), "and")) {
        int line = cur(p)->line;
        next(p);
        e = node2(p, JE_AND, line, e, parse_not(p));
    }
    return e;
}

static jexpr *parse_or(parser *p)
{
    jexpr *e = parse_and(p);
    while (e && is_name(cur(p), "or")) {
        int line = cur(p)->line;
        next(p);
        e = node2(p, JE_OR, line, e, parse_and(p));
    }
    return e;
}

/* `a if b else c`, left to right: `a if b` alone is undefined when b is false. */
static jexpr *parse_condexpr(parser *p)
{
    if (!enter(p))
        return NULL;
    jexpr *e = parse_or(p);
    while (e && is_name(cur(p), "if")) {
        int line = cur(p)->line;
        next(p);
        jexpr *test = parse_or(p), *other = NULL;
        if (test && skip_name(p, "else") && !(other = parse_condexpr(p)))
            test = NULL;
        jexpr *c = test ? node(p, JE_COND, line, 3) : NULL;
        if (c) {
            c->args[0] = test;
            c->args[1] = e;
            c->args[2] = other;
        }
        e = c;
    }
    p->depth--;
    return e;
}

static jexpr *parse_expression(parser *p, bool with_condexpr)
{
    return with_condexpr ? parse_condexpr(p) : parse_or(p);
}

/* ---- statements ---- */

static bool assignable(const jexpr *e)
{
    if (e->kind == JE_NAME || e->kind == JE_NSREF)
        return true;
    if (e->kind != JE_TUPLE)
        return false;
    for (int i = 0; i < e->n_args; i++)
        if (!assignable(e->args[i]))
            return false;
    return true;
}

static jexpr *parse_assign_target(parser *p, const char *const *extra_end, bool with_namespace)
{
    int line = cur(p)->line;
    jexpr *e = parse_tuple(p, true, true, extra_end, false, with_namespace);
    if (e && !assignable(e)) {
        fail(p, line, "can't assign to '%s'", e->kind == JE_CONST ? "const" : "expression");
        return NULL;
    }
    return e;
}

static jstmt *stmt(parser *p, jstmt_kind kind, int line)
{
    jstmt *s = alloc(p, sizeof *s);
    if (s) {
        s->kind = kind;
        s->line = line;
    }
    return s;
}

static bool subparse(parser *p, const char *const *end_names, jblock *out);

/* `%}`, the body up to one of end_names (left current), as jinja2's parse_statements. */
static bool parse_body(parser *p, const char *const *end_names, jblock *out)
{
    skip_op(p, JOP_COLON);
    if (!expect_type(p, JT_BLOCK_END, "'%}'"))
        return false;
    return subparse(p, end_names, out);
}

/* Names the tokens of [from, to) use: a macro's body asking for caller, varargs or kwargs. */
static void scan_special_names(parser *p, size_t from, jstmt *s)
{
    for (size_t i = from; i < p->pos; i++) {
        s->uses_caller |= is_name(&p->t[i], "caller");
        s->uses_varargs |= is_name(&p->t[i], "varargs");
        s->uses_kwargs |= is_name(&p->t[i], "kwargs");
    }
}

/* (a, b=default, ...) of a macro or call block. */
static bool parse_signature(parser *p, jstmt *s)
{
    enum { MAX_PARAMS = 256 };
    const char *names[MAX_PARAMS];
    jexpr *defaults[MAX_PARAMS];
    if (!expect_op(p, JOP_LPAREN))
        return false;
    int n = 0;
    while (!is_op(cur(p), JOP_RPAREN)) {
        if (n && !expect_op(p, JOP_COMMA))
            return false;
        int line = cur(p)->line;
        if (n == MAX_PARAMS) {
            fail(p, line, "more than %d parameters", MAX_PARAMS);
            return false;
        }
        if (!(names[n] = expect_name(p)))
            return false;
        defaults[n] = NULL;
        if (skip_op(p, JOP_ASSIGN)) {
            if (!(defaults[n] = parse_expression(p, true)))
                return false;
        } else if (n && defaults[n - 1]) {
            fail(p, line, "non-default argument follows default argument");
            return false;
        }
        n++;
    }
    next(p);
    s->n_params = n;
    s->params = alloc(p, (size_t)(n + 1) * sizeof *s->params);
    s->defaults = alloc(p, (size_t)(n + 1) * sizeof *s->defaults);
    if (!s->params || !s->defaults)
        return false;
    memcpy(s->params, names, (size_t)n * sizeof *names);
    memcpy(s->defaults, defaults, (size_t)n * sizeof *defaults);
    return true;
}

static jstmt *parse_for(parser *p, int line)
{
    static const char *const in_end[] = {"in", NULL}, *const iter_end[] = {"recursive", NULL};
    static const char *const body_end[] = {"endfor", "else", NULL}, *const else_end[] = {"endfor", NULL};
    jstmt *s = stmt(p, JS_FOR, line);
    if (!s || !(s->target = parse_assign_target(p, in_end, false)))
        return NULL;
    if (!is_name(cur(p), "in")) {
        unexpected(p, "'in'");
        return NULL;
    }
    next(p);
    if (!(s->expr = parse_tuple(p, false, false, iter_end, false, false)))
        return NULL;
    if (skip_name(p, "if") && !(s->cond = parse_expression(p, true)))
        return NULL;
    if (is_name(cur(p), "recursive")) {
        fail(p, cur(p)->line, "recursive for loops are not supported");
        return NULL;
    }
    p->loops++;
    bool ok = parse_body(p, body_end, &s->body);
    p->loops--;
    if (!ok)
        return NULL;
    if (skip_name(p, "else")) {
        if (!parse_body(p, else_end, &s->orelse))
            return NULL;
    }
    next(p); /* endfor */
    return s;
}

static jstmt *parse_if(parser *p, int line)
{
    static const char *const body_end[] = {"elif", "else", "endif", NULL}, *const else_end[] = {"endif", NULL};
    jstmt *s = stmt(p, JS_IF, line);
    if (!s || !(s->expr = parse_tuple(p, false, false, NULL, false, false)) || !parse_body(p, body_end, &s->body))
        return NULL;
    if (is_name(cur(p), "elif")) {
        int eline = cur(p)->line;
        next(p);
        jstmt *elif = parse_if(p, eline); /* consumes the endif */
        if (!elif || !(s->orelse.items = alloc(p, sizeof *s->orelse.items)))
            return NULL;
        s->orelse.items[0] = elif;
        s->orelse.n = 1;
        return s;
    }
    if (skip_name(p, "else") && !parse_body(p, else_end, &s->orelse))
        return NULL;
    next(p); /* endif */
    return s;
}

static jstmt *parse_set(parser *p, int line)
{
    static const char *const end[] = {"endset", NULL};
    jexpr *target = parse_assign_target(p, NULL, true);
    if (!target)
        return NULL;
    if (skip_op(p, JOP_ASSIGN)) {
        jstmt *s = stmt(p, JS_SET, line);
        if (!s || !(s->expr = parse_tuple(p, false, true, NULL, false, false)))
            return NULL;
        s->target = target;
        return s;
    }
    jstmt *s = stmt(p, JS_SET_BLOCK, line);
    if (!s)
        return NULL;
    s->target = target;
    if (is_op(cur(p), JOP_PIPE) && !(s->filter = parse_filter(p, NULL, false)))
        return NULL;
    if (!parse_body(p, end, &s->body))
        return NULL;
    next(p);
    return s;
}

/* The body of a macro or call block: its own function, so break/continue cannot reach loops around it. */
static bool parse_function_body(parser *p, jstmt *s, const char *end_name)
{
    const char *const end[] = {end_name, NULL};
    size_t from = p->pos;
    int loops = p->loops;
    p->loops = 0;
    bool ok = parse_body(p, end, &s->body);
    p->loops = loops;
    if (!ok)
        return false;
    scan_special_names(p, from, s);
    next(p);
    return true;
}

static jstmt *parse_macro(parser *p, int line)
{
    jstmt *s = stmt(p, JS_MACRO, line);
    if (!s || !(s->name = expect_name(p)) || !parse_signature(p, s))
        return NULL;
    return parse_function_body(p, s, "endmacro") ? s : NULL;
}

static jstmt *parse_call_block(parser *p, int line)
{
    jstmt *s = stmt(p, JS_CALL_BLOCK, line);
    if (!s)
        return NULL;
    s->name = "caller";
    if (is_op(cur(p), JOP_LPAREN) && !parse_signature(p, s))
        return NULL;
    if (!(s->expr = parse_expression(p, true)))
        return NULL;
    if (s->expr->kind != JE_CALL) {
        fail(p, line, "expected call");
        return NULL;
    }
    return parse_function_body(p, s, "endcall") ? s : NULL;
}

static jstmt *parse_with(parser *p, int line)
{
    static const char *const end[] = {"endwith", NULL};
    jstmt *s = stmt(p, JS_WITH, line);
    exprs targets = {0}, values = {0};
    while (s && cur(p)->type != JT_BLOCK_END) {
        if (targets.n && !expect_op(p, JOP_COMMA))
            return NULL;
        if (!push(p, &targets, parse_assign_target(p, NULL, false)) || !expect_op(p, JOP_ASSIGN) ||
            !push(p, &values, parse_expression(p, true)))
            return NULL;
    }
    if (!s || !parse_body(p, end, &s->body))
        return NULL;
    next(p);
    s->targets = targets.v;
    s->values = values.v;
    s->n_with = targets.n;
    return s;
}

/* Statements being collected for a block (malloc'd; copied into the arena when complete). */
typedef struct stmts {
    jstmt **v;
    int n, cap;
} stmts;

static bool append(parser *p, stmts *l, jstmt *s)
{
    if (!s)
        return false;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        jstmt **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            fail(p, s->line, "out of memory");
            return false;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return true;
}

/* {% print a, b %}: outputs, as {{ a }}{{ b }}. */
static bool parse_print(parser *p, int line, stmts *out)
{
    for (bool first = true; cur(p)->type != JT_BLOCK_END; first = false) {
        if (!first && !expect_op(p, JOP_COMMA))
            return false;
        jstmt *s = stmt(p, JS_OUTPUT, line);
        if (!s || !(s->expr = parse_expression(p, true)) || !append(p, out, s))
            return false;
    }
    return true;
}

static jstmt *parse_scoped_block(parser *p, int line, jstmt_kind kind, const char *end_name)
{
    const char *const end[] = {end_name, NULL};
    jstmt *s = stmt(p, kind, line);
    if (!s)
        return NULL;
    if (kind == JS_FILTER_BLOCK && !(s->filter = parse_filter(p, NULL, true)))
        return NULL;
    if (!parse_body(p, end, &s->body))
        return NULL;
    next(p);
    return s;
}

static jstmt *parse_tag(parser *p, const char *name, int line)
{
    static const char *const unsupported[] = {"block", "extends", "include", "import", "from", "autoescape",
                                              "do", "trans", "pluralize", "debug", NULL};
    if (!strcmp(name, "for"))
        return parse_for(p, line);
    if (!strcmp(name, "if"))
        return parse_if(p, line);
    if (!strcmp(name, "set"))
        return parse_set(p, line);
    if (!strcmp(name, "macro"))
        return parse_macro(p, line);
    if (!strcmp(name, "call"))
        return parse_call_block(p, line);
    if (!strcmp(name, "filter"))
        return parse_scoped_block(p, line, JS_FILTER_BLOCK, "endfilter");
    if (!strcmp(name, "with"))
        return parse_with(p, line);
    if (!strcmp(name, "generation"))
        return parse_scoped_block(p, line, JS_SCOPE, "endgeneration");
    if (!strcmp(name, "break") || !strcmp(name, "continue")) {
        if (p->loops)
            return stmt(p, name[0] == 'b' ? JS_BREAK : JS_CONTINUE, line);
        fail(p, line, "'%s' outside loop", name);
        return NULL;
    }
    bool known = false;
    for (const char *const *u = unsupported; *u; u++)
        known |= !strcmp(name, *u);
    fail(p, line, known ? "the tag '%s' is not supported (no files, no inheritance)" : "unknown tag '%s'", name);
    return NULL;
}

/* One {% tag ... %} (the name is current), appended to out. */
static bool parse_statement(parser *p, stmts *out, int line)
{
    const jtoken *t = cur(p);
    if (t->type != JT_NAME) {
        unexpected(p, "a tag name");
        return false;
    }
    if (!enter(p))
        return false;
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(t->len < 31 ? t->len : 31), t->text);
    next(p);
    bool ok = !strcmp(name, "print") ? parse_print(p, line, out) : append(p, out, parse_tag(p, name, line));
    p->depth--;
    return ok && expect_type(p, JT_BLOCK_END, "'%}'");
}

static bool end_reached(const parser *p, const char *const *end_names)
{
    for (; end_names && *end_names; end_names++)
        if (is_name(cur(p), *end_names))
            return true;
    return false;
}

/* Statements and output up to `{% <one of end_names>` (its name left current) or the end of the template. */
static bool subparse(parser *p, const char *const *end_names, jblock *out)
{
    stmts l = {0};
    bool ok = true;
    while (ok) {
        const jtoken *t = cur(p);
        if (t->type == JT_EOF) {
            if (end_names) {
                fail(p, t->line, "unexpected end of template: expected '%s'", end_names[0]);
                ok = false;
            }
            break;
        }
        next(p);
        if (t->type == JT_BLOCK_BEGIN) {
            if (end_reached(p, end_names))
                break;
            ok = parse_statement(p, &l, t->line);
        } else if (t->type == JT_DATA) {
            jstmt *s = stmt(p, JS_DATA, t->line);
            ok = s && (s->text = copy_text(p, t->text, t->len)) && append(p, &l, s);
            if (ok)
                s->len = t->len;
        } else if (t->type == JT_VAR_BEGIN) {
            jstmt *s = stmt(p, JS_OUTPUT, t->line);
            ok = s && (s->expr = parse_tuple(p, false, true, NULL, false, false)) &&
                 expect_type(p, JT_VAR_END, "'}}'") && append(p, &l, s);
        } else {
            p->pos--;
            unexpected(p, NULL);
            ok = false;
        }
    }
    if (ok && l.n) {
        ok = (out->items = alloc(p, (size_t)l.n * sizeof *out->items)) != NULL;
        if (ok)
            memcpy(out->items, l.v, (size_t)l.n * sizeof *l.v);
        out->n = l.n;
    }
    free(l.v);
    return ok && !p->failed;
}

void jinja_free(jinja_template *t)
{
    if (!t)
        return;
    for (jarena *a = t->arena, *next_a; a; a = next_a) {
        next_a = a->next;
        free(a);
    }
    for (size_t i = 0; i < t->n_consts; i++)
        jstr_free_immortal(t->consts[i]);
    free(t->consts);
    free(t);
}

fk_status jinja_parse(const char *src, size_t len, int max_depth, jinja_template **out, fk_error *err)
{
    fk_error scratch;
    if (!err)
        err = &scratch;
    *out = NULL;
    size_t bad = utf8_check(src, len);
    if (bad < len)
        return fk_error_set(err, FK_ERR_FORMAT, "the template is not valid UTF-8 at byte %zu", bad);
    jlexed lx;
    fk_status st = jinja_lex(src, len, &lx, err);
    if (st)
        return st;
    jinja_template *t = calloc(1, sizeof *t);
    if (!t) {
        jinja_lex_free(&lx);
        return fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "out of memory while parsing the template");
    }
    parser p = {.t = lx.toks, .tmpl = t, .err = err, .max_depth = max_depth};
    bool ok = subparse(&p, NULL, &t->body);
    jinja_lex_free(&lx);
    if (!ok) {
        jinja_free(t);
        return err->status;
    }
    *out = t;
    return FK_OK;
}
