/* jinja_eval.c — renders a parsed chat template: statements and expressions evaluated as jinja2's compiled code
 * would, with its scoping (an if shares its scope; each for-loop iteration, macro call, set block, with and call
 * block gets a child scope; macros see the scope they were defined in at call time) and the sandbox's budgets
 * (nesting depth, loop iterations and macro calls, evaluation steps, output and allocation). */
#include <stdlib.h>
#include <string.h>

#include "jinja.h"
#include "jinja_ast.h"
#include "jinja_filter.h"
#include "jinja_format.h"
#include "jinja_method.h"
#include "jinja_ops.h"

jinja_limits jinja_limits_default(void)
{
    return (jinja_limits){
        .max_depth = 500,
        .max_iterations = 1000000,
        .max_steps = 100000000,
        .max_output = (size_t)64 << 20,
        .max_alloc = (size_t)1 << 30,
    };
}

typedef struct jvar {
    const char *name; /* template text or a static string: outlives the scope */
    jv value;
} jvar;

typedef struct jscope {
    struct jscope *parent;
    jvar *vars;
    size_t n, cap;
    jfunc *closures; /* macros and callers defined here: they expire with the scope */
} jscope;

typedef struct render {
    jrt *rt;
    jbuf *out;                 /* where output goes: the result, or a capture (set block, macro, filter block) */
    const jinja_var *vars;     /* the render's variables, below the top-level scope */
    size_t n_vars;
} render;

/* Control flow of a statement: negative values are fk_status errors. */
enum { FLOW_NEXT = 0, FLOW_BREAK = 1, FLOW_CONTINUE = 2 };

static fk_status eval(render *r, jscope *s, const jexpr *e, jv *out);
static int exec_block(render *r, jscope *s, const jblock *b);

/* ---- scopes ---- */

static void scope_end(jscope *s)
{
    for (jfunc *f = s->closures, *next; f; f = next) {
        next = f->next;
        f->scope = NULL;
        jv_unref((jv){.type = JV_FUNC, .u.fn = f});
    }
    for (size_t i = 0; i < s->n; i++)
        jv_unref(s->vars[i].value);
    free(s->vars);
    *s = (jscope){0};
}

/* Binds name to v (taking the reference) in scope s. */
static fk_status scope_set(render *r, jscope *s, const char *name, jv v)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->vars[i].name, name)) {
            jv_unref(s->vars[i].value);
            s->vars[i].value = v;
            return FK_OK;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        jvar *vars = jrt_alloc(r->rt, cap * sizeof *vars);
        if (!vars) {
            jv_unref(v);
            return r->rt->err->status;
        }
        if (s->n)
            memcpy(vars, s->vars, s->n * sizeof *vars);
        free(s->vars);
        s->vars = vars;
        s->cap = cap;
    }
    s->vars[s->n++] = (jvar){.name = name, .value = v};
    return FK_OK;
}

static fk_status lookup(render *r, jscope *s, const char *name, jv *out)
{
    for (; s; s = s->parent)
        for (size_t i = 0; i < s->n; i++)
            if (!strcmp(s->vars[i].name, name)) {
                *out = jv_ref(s->vars[i].value);
                return FK_OK;
            }
    for (size_t i = 0; i < r->n_vars; i++)
        if (!strcmp(r->vars[i].name, name)) {
            *out = jv_ref(r->vars[i].value);
            return FK_OK;
        }
    int g = jinja_global_find(name);
    if (g >= 0) {
        fk_status st = jv_func(r->rt, JF_GLOBAL, g, out);
        if (!st)
            out->u.fn->name = jinja_global_name(g);
        return st;
    }
    return jv_undefined_why(r->rt, out, "'%s' is undefined", name);
}

/* A macro (or a call block's caller) defined in scope s. */
static fk_status make_closure(render *r, jscope *s, const jstmt *macro, jv *out)
{
    fk_status st = jv_func(r->rt, JF_MACRO, 0, out);
    if (st)
        return st;
    jfunc *f = out->u.fn;
    f->macro = macro;
    f->name = macro->name;
    f->scope = s;
    f->next = s->closures;
    s->closures = f;
    f->refs++; /* the scope's reference */
    return FK_OK;
}

/* ---- assignment ---- */

static fk_status assign(render *r, jscope *s, const jexpr *target, jv v);

static fk_status unpack(render *r, jscope *s, const jexpr *target, jv v)
{
    jv items;
    fk_status st = jv_iter(r->rt, v, &items);
    if (st)
        return st;
    size_t n = items.u.l->n, want = (size_t)target->n_args;
    r->rt->line = target->line;
    if (n != want)
        st = n > want ? jrt_fail(r->rt, "too many values to unpack (expected %zu)", want)
                      : jrt_fail(r->rt, "not enough values to unpack (expected %zu, got %zu)", want, n);
    for (size_t i = 0; i < n && !st; i++)
        st = assign(r, s, target->args[i], jv_ref(items.u.l->items[i]));
    jv_unref(items);
    return st;
}

/* Assigns v (taking the reference) to a name, a tuple of targets or a namespace attribute. */
static fk_status assign(render *r, jscope *s, const jexpr *target, jv v)
{
    fk_status st;
    switch (target->kind) {
    case JE_NAME: return scope_set(r, s, target->name, v);
    case JE_TUPLE:
        st = unpack(r, s, target, v);
        jv_unref(v);
        return st;
    default: {
        jv ns;
        if ((st = lookup(r, s, target->name, &ns))) {
            jv_unref(v);
            return st;
        }
        r->rt->line = target->line;
        if (ns.type != JV_NS)
            st = jrt_fail(r->rt, "cannot assign attribute on non-namespace object");
        else if (target->attr[0] == '_')
            st = jrt_fail(r->rt,
                          "Chat templates cannot store underscore-prefixed attributes on a namespace, but got "
                          "'%s'. Please rename the attribute.",
                          target->attr);
        jv key;
        if (!st && !(st = jv_str(r->rt, target->attr, strlen(target->attr), &key))) {
            st = jv_dict_set(r->rt, ns.u.ns->attrs, key, v);
            v = jv_none();
        }
        jv_unref(v);
        jv_unref(ns);
        return st;
    }
    }
}

/* ---- calls ---- */

/* Evaluated arguments of a call, filter or test: e->args[first..] and the keywords. */
typedef struct evargs {
    jargs a;
    jv *vals; /* n_pos + n_kw */
    size_t n;
} evargs;

static void evargs_free(evargs *ea)
{
    for (size_t i = 0; i < ea->n; i++)
        jv_unref(ea->vals[i]);
    free(ea->vals);
}

static fk_status eval_args(render *r, jscope *s, const jexpr *e, int first, evargs *ea)
{
    size_t n_pos = e->n_args > first ? (size_t)(e->n_args - first) : 0, total = n_pos + (size_t)e->n_kw;
    *ea = (evargs){0};
    ea->vals = jrt_alloc(r->rt, (total ? total : 1) * sizeof *ea->vals);
    if (!ea->vals)
        return r->rt->err->status;
    fk_status st = FK_OK;
    for (size_t i = 0; i < total && !st; i++) {
        const jexpr *x = i < n_pos ? e->args[first + (int)i] : e->kw[i - n_pos];
        if (!(st = eval(r, s, x, &ea->vals[i])))
            ea->n++;
    }
    ea->a = (jargs){.pos = ea->vals, .n_pos = n_pos, .kw_names = e->kw_names, .kw = ea->vals + n_pos,
                    .n_kw = (size_t)e->n_kw};
    if (st)
        evargs_free(ea);
    return st;
}

static fk_status enter(render *r)
{
    if (r->rt->depth >= r->rt->limits.max_depth)
        return jrt_fail(r->rt, "the template nests (or recurses) more than %d levels deep", r->rt->limits.max_depth);
    r->rt->depth++;
    return FK_OK;
}

static fk_status count_iteration(jrt *rt)
{
    if (++rt->iterations > rt->limits.max_iterations)
        return jrt_fail(rt, "the template ran more than %llu loop iterations and macro calls",
                        (unsigned long long)rt->limits.max_iterations);
    return FK_OK;
}

/* Binds a macro's parameters in its scope as jinja2's Macro.__call__ does: positional first, then keywords for the
 * rest, then defaults (evaluated in the new scope, so they can use earlier parameters). */
static fk_status bind_params(render *r, jscope *ms, const jfunc *fn, const jargs *a, const jv *caller)
{
    const jstmt *m = fn->macro;
    jrt *rt = r->rt;
    size_t n_params = (size_t)m->n_params;
    bool *used_kw = jrt_alloc(rt, a->n_kw + 1);
    if (!used_kw)
        return rt->err->status;
    memset(used_kw, 0, a->n_kw + 1);
    fk_status st = FK_OK;
    for (size_t i = 0; i < n_params && !st; i++) {
        jv v = jv_undefined();
        bool have = i < a->n_pos;
        if (have)
            v = jv_ref(a->pos[i]);
        for (size_t k = 0; !have && k < a->n_kw; k++)
            if (!strcmp(a->kw_names[k], m->params[i])) {
                v = jv_ref(a->kw[k]);
                used_kw[k] = have = true;
            }
        if (!have && m->defaults[i])
            st = eval(r, ms, m->defaults[i], &v);
        else if (!have)
            st = jv_undefined_why(rt, &v, "parameter '%s' was not provided", m->params[i]);
        if (!st)
            st = scope_set(r, ms, m->params[i], v);
    }
    rt->line = m->line;
    if (!st && caller)
        st = scope_set(r, ms, "caller", jv_ref(*caller));
    if (!st && m->uses_kwargs) {
        jv kw;
        if (!(st = jv_dict(rt, 0, &kw))) {
            for (size_t k = 0; k < a->n_kw && !st; k++) {
                jv key;
                if (!used_kw[k] && !(st = jv_str(rt, a->kw_names[k], strlen(a->kw_names[k]), &key)))
                    st = jv_dict_set(rt, kw.u.d, key, jv_ref(a->kw[k]));
            }
            if (!st)
                st = scope_set(r, ms, "kwargs", kw);
            else
                jv_unref(kw);
        }
    } else {
        for (size_t k = 0; k < a->n_kw && !st; k++)
            if (!used_kw[k])
                st = jrt_fail(rt, "macro '%s' takes no keyword argument '%s'", fn->name, a->kw_names[k]);
    }
    if (!st && m->uses_varargs) {
        jv rest;
        if (!(st = jv_list(rt, 0, true, &rest))) {
            for (size_t i = n_params; i < a->n_pos && !st; i++)
                st = jv_list_push(rt, rest.u.l, jv_ref(a->pos[i]));
            st = st ? (jv_unref(rest), st) : scope_set(r, ms, "varargs", rest);
        }
    } else if (!st && a->n_pos > n_params) {
        st = jrt_fail(rt, "macro '%s' takes not more than %zu argument(s)", fn->name, n_params);
    }
    free(used_kw);
    return st;
}

/* Calls a macro (or a caller): its body rendered in a new scope under the one it was defined in. */
static fk_status call_macro(render *r, const jfunc *fn, const jargs *a, jv caller, jv *out)
{
    jrt *rt = r->rt;
    if (!fn->scope)
        return jrt_fail(rt, "macro '%s' was called after the block that defined it ended", fn->name);
    if (caller.type == JV_FUNC && !fn->macro->uses_caller)
        return jrt_fail(rt, "macro '%s' takes no keyword argument 'caller'", fn->name);
    fk_status st = count_iteration(rt);
    if (st || (st = enter(r)))
        return st;
    jscope ms = {.parent = fn->scope};
    /* A macro that names `caller` gets the call block's, or an undefined one; a caller itself binds none (its
     * body sees the enclosing macro's). */
    bool binds_caller = fn->macro->kind == JS_MACRO && fn->macro->uses_caller;
    jv c = jv_undefined();
    if (binds_caller && caller.type == JV_FUNC)
        c = jv_ref(caller);
    else if (binds_caller)
        st = jv_undefined_why(rt, &c, "No caller defined");
    jbuf buf = {.max = rt->limits.max_output};
    if (!st)
        st = bind_params(r, &ms, fn, a, binds_caller ? &c : NULL);
    jv_unref(c);
    if (!st) {
        jbuf *saved = r->out;
        r->out = &buf;
        int flow = exec_block(r, &ms, &fn->macro->body);
        r->out = saved;
        st = flow < 0 ? flow : FK_OK;
    }
    scope_end(&ms);
    if (!st)
        st = jbuf_to_str(rt, &buf, out);
    jbuf_free(&buf);
    rt->depth--;
    return st;
}

static fk_status call_value(render *r, jv callee, const jargs *a, jv *out)
{
    jrt *rt = r->rt;
    if (callee.type == JV_UNDEFINED)
        return jv_fail_undefined(rt, callee);
    if (callee.type != JV_FUNC)
        return jrt_fail(rt, "'%s' object is not callable", jv_type_name(callee));
    const jfunc *fn = callee.u.fn;
    switch (fn->kind) {
    case JF_MACRO: return call_macro(r, fn, a, jv_undefined(), out);
    case JF_GLOBAL: return jinja_global_call(rt, fn->id, a, out);
    default: return jinja_method_call(rt, fn->id, fn->self, a, out);
    }
}

static fk_status eval_call(render *r, jscope *s, const jexpr *e, jv caller, jv *out)
{
    jv callee;
    fk_status st = eval(r, s, e->args[0], &callee);
    if (st)
        return st;
    evargs ea;
    if (!(st = eval_args(r, s, e, 1, &ea))) {
        r->rt->line = e->line;
        if (caller.type == JV_FUNC) {
            if (callee.type == JV_FUNC && callee.u.fn->kind == JF_MACRO)
                st = call_macro(r, callee.u.fn, &ea.a, caller, out);
            else
                st = jrt_fail(r->rt, "{%% call %%} needs a macro, got %s", jv_type_name(callee));
        } else {
            st = call_value(r, callee, &ea.a, out);
        }
        evargs_free(&ea);
    }
    jv_unref(callee);
    return st;
}

/* Applies filter node f to in (taking the reference): its own arguments are f->args[1..] and its keywords. */
static fk_status apply_filter(render *r, jscope *s, const jexpr *f, jv in, jv *out)
{
    evargs ea;
    fk_status st = eval_args(r, s, f, 1, &ea);
    if (!st) {
        r->rt->line = f->line;
        st = jinja_filter_apply(r->rt, f->builtin, in, &ea.a, out);
        evargs_free(&ea);
    }
    jv_unref(in);
    return st;
}

/* The filters of `{% filter f | g %}` and `{% set x | f | g %}` applied to value (taking the reference): the
 * innermost node has no operand (args[0] NULL), the value enters there. */
static fk_status apply_filter_chain(render *r, jscope *s, const jexpr *f, jv value, jv *out)
{
    if (f->args[0]) {
        jv in;
        fk_status st = apply_filter_chain(r, s, f->args[0], value, &in);
        if (st)
            return st;
        value = in;
    }
    return apply_filter(r, s, f, value, out);
}

/* ---- expressions ---- */

static fk_status eval_sequence(render *r, jscope *s, const jexpr *e, jv *out)
{
    fk_status st = e->kind == JE_DICT ? jv_dict(r->rt, (size_t)e->n_args / 2, out)
                                      : jv_list(r->rt, (size_t)e->n_args, e->kind == JE_TUPLE, out);
    if (st)
        return st;
    for (int i = 0; i < e->n_args && !st; i++) {
        jv v;
        if ((st = eval(r, s, e->args[i], &v)))
            break;
        if (e->kind != JE_DICT) {
            st = jv_list_push(r->rt, out->u.l, v);
            continue;
        }
        jv val;
        if ((st = eval(r, s, e->args[++i], &val))) {
            jv_unref(v);
            break;
        }
        r->rt->line = e->line;
        st = jv_dict_set(r->rt, out->u.d, v, val);
    }
    if (st)
        jv_clear(out);
    return st;
}

static fk_status eval_compare(render *r, jscope *s, const jexpr *e, jv *out)
{
    jv left;
    fk_status st = eval(r, s, e->args[0], &left);
    if (st)
        return st;
    bool result = true;
    for (int i = 1; i < e->n_args && !st && result; i++) {
        jv right;
        if ((st = eval(r, s, e->args[i], &right)))
            break;
        r->rt->line = e->line;
        jcmp c = e->cmps[i - 1];
        if (c == JC_EQ || c == JC_NE) {
            st = jv_eq(r->rt, left, right, &result);
            result = c == JC_EQ ? result : !result;
        } else if (c == JC_IN || c == JC_NOTIN) {
            st = jv_contains(r->rt, right, left, &result);
            result = c == JC_IN ? result : !result;
        } else {
            int k;
            st = jv_cmp(r->rt, left, right, &k);
            result = k != 2 && (c == JC_LT ? k < 0 : c == JC_LE ? k <= 0 : c == JC_GT ? k > 0 : k >= 0);
        }
        jv_unref(left);
        left = right; /* Python evaluates each operand once: `a < b < c` is `a < b and b < c` */
    }
    jv_unref(left);
    if (!st)
        *out = jv_bool(result);
    return st;
}

static fk_status eval_concat(render *r, jscope *s, const jexpr *e, jv *out)
{
    jbuf b = {.max = SIZE_MAX};
    fk_status st = FK_OK;
    for (int i = 0; i < e->n_args && !st; i++) {
        jv v;
        if (!(st = eval(r, s, e->args[i], &v))) {
            r->rt->line = e->line;
            st = jfmt_str(r->rt, &b, v);
            jv_unref(v);
        }
    }
    if (!st)
        st = jbuf_to_str(r->rt, &b, out);
    jbuf_free(&b);
    return st;
}

/* Evaluates the operands of a unary or binary node, then applies it. */
static fk_status eval_operator(render *r, jscope *s, const jexpr *e, jv *out)
{
    jv a, b = jv_none();
    fk_status st = eval(r, s, e->args[0], &a);
    if (st)
        return st;
    if (e->kind == JE_BINOP && (st = eval(r, s, e->args[1], &b))) {
        jv_unref(a);
        return st;
    }
    r->rt->line = e->line;
    switch (e->kind) {
    case JE_NOT: *out = jv_bool(!jv_truthy(a)); break;
    case JE_NEG:
    case JE_POS: st = jv_unary(r->rt, e->kind == JE_NEG, a, out); break;
    default: st = jv_binop(r->rt, (jop)e->op, a, b, out); break;
    }
    jv_unref(a);
    jv_unref(b);
    return st;
}

static fk_status eval_access(render *r, jscope *s, const jexpr *e, jv *out)
{
    jv obj, parts[3] = {jv_none(), jv_none(), jv_none()};
    fk_status st = eval(r, s, e->args[0], &obj);
    if (st)
        return st;
    int n = e->kind == JE_GETITEM ? 1 : e->kind == JE_SLICE ? 3 : 0;
    for (int i = 0; i < n && !st; i++)
        if (e->args[i + 1])
            st = eval(r, s, e->args[i + 1], &parts[i]);
    if (!st) {
        r->rt->line = e->line;
        st = e->kind == JE_GETATTR ? jv_getattr(r->rt, obj, e->name, out)
             : e->kind == JE_GETITEM ? jv_getitem(r->rt, obj, parts[0], out)
                                     : jv_slice(r->rt, obj, parts[0], parts[1], parts[2], out);
    }
    for (int i = 0; i < 3; i++)
        jv_unref(parts[i]);
    jv_unref(obj);
    return st;
}

static fk_status eval_test(render *r, jscope *s, const jexpr *e, jv *out)
{
    jv v;
    fk_status st = eval(r, s, e->args[0], &v);
    if (st)
        return st;
    evargs ea;
    if (!(st = eval_args(r, s, e, 1, &ea))) {
        bool pass;
        r->rt->line = e->line;
        if (!(st = jinja_test_apply(r->rt, e->builtin, v, &ea.a, &pass)))
            *out = jv_bool(pass);
        evargs_free(&ea);
    }
    jv_unref(v);
    return st;
}

static fk_status eval_inner(render *r, jscope *s, const jexpr *e, jv *out)
{
    fk_status st;
    jv v;
    switch (e->kind) {
    case JE_CONST: *out = jv_ref(e->value); return FK_OK;
    case JE_NAME: return lookup(r, s, e->name, out);
    case JE_LIST:
    case JE_TUPLE:
    case JE_DICT: return eval_sequence(r, s, e, out);
    case JE_GETATTR:
    case JE_GETITEM:
    case JE_SLICE: return eval_access(r, s, e, out);
    case JE_CALL: return eval_call(r, s, e, jv_undefined(), out);
    case JE_FILTER:
        if ((st = eval(r, s, e->args[0], &v)))
            return st;
        return apply_filter(r, s, e, v, out);
    case JE_TEST: return eval_test(r, s, e, out);
    case JE_NOT:
    case JE_NEG:
    case JE_POS:
    case JE_BINOP: return eval_operator(r, s, e, out);
    case JE_AND:
    case JE_OR:
        /* Python's and/or: the deciding operand itself. */
        if ((st = eval(r, s, e->args[0], &v)))
            return st;
        if (jv_truthy(v) == (e->kind == JE_OR)) {
            *out = v;
            return FK_OK;
        }
        jv_unref(v);
        return eval(r, s, e->args[1], out);
    case JE_CONCAT: return eval_concat(r, s, e, out);
    case JE_COMPARE: return eval_compare(r, s, e, out);
    case JE_COND: {
        if ((st = eval(r, s, e->args[0], &v)))
            return st;
        bool yes = jv_truthy(v);
        jv_unref(v);
        if (yes)
            return eval(r, s, e->args[1], out);
        if (e->args[2])
            return eval(r, s, e->args[2], out);
        return jv_undefined_why(r->rt, out,
                                "the inline if-expression on line %d evaluated to false and no else section was "
                                "defined.",
                                e->line);
    }
    case JE_NSREF: break;
    }
    return jrt_fail(r->rt, "cannot evaluate this expression");
}

static fk_status eval(render *r, jscope *s, const jexpr *e, jv *out)
{
    jrt *rt = r->rt;
    rt->line = e->line;
    fk_status st = jrt_charge(rt, 1);
    if (st || (st = enter(r)))
        return st;
    st = eval_inner(r, s, e, out);
    rt->depth--;
    return st;
}

/* ---- statements ---- */

static fk_status output(render *r, jscope *s, const jexpr *e)
{
    jv v;
    fk_status st = eval(r, s, e, &v);
    if (st)
        return st;
    r->rt->line = e->line;
    st = jfmt_str(r->rt, r->out, v);
    jv_unref(v);
    return st;
}

/* Renders a block into a string in a child scope of s (set blocks, filter blocks). */
static fk_status capture(render *r, jscope *s, const jblock *b, jv *out)
{
    jscope inner = {.parent = s};
    jbuf buf = {.max = r->rt->limits.max_output}, *saved = r->out;
    r->out = &buf;
    int flow = exec_block(r, &inner, b);
    r->out = saved;
    scope_end(&inner);
    fk_status st = flow < 0 ? flow : jbuf_to_str(r->rt, &buf, out);
    jbuf_free(&buf);
    return st;
}

static int exec_for(render *r, jscope *s, const jstmt *st_for)
{
    jrt *rt = r->rt;
    jv seq, items;
    fk_status st = eval(r, s, st_for->expr, &seq);
    if (st)
        return st;
    rt->line = st_for->line;
    st = jv_iter(rt, seq, &items);
    jv_unref(seq);
    if (st)
        return st;
    if (st_for->cond) {
        /* `for x in xs if cond`: the loop (and loop.length) sees only the items that pass. */
        jv kept;
        if ((st = jv_list(rt, 0, false, &kept))) {
            jv_unref(items);
            return st;
        }
        for (size_t i = 0; i < items.u.l->n && !st; i++) {
            jscope cs = {.parent = s};
            jv c;
            if (!(st = assign(r, &cs, st_for->target, jv_ref(items.u.l->items[i]))) &&
                !(st = eval(r, &cs, st_for->cond, &c))) {
                if (jv_truthy(c))
                    st = jv_list_push(rt, kept.u.l, jv_ref(items.u.l->items[i]));
                jv_unref(c);
            }
            scope_end(&cs);
        }
        jv_unref(items);
        if (st) {
            jv_unref(kept);
            return st;
        }
        items = kept;
    }
    jloop *loop = jrt_alloc(rt, sizeof *loop);
    if (!loop) {
        jv_unref(items);
        return rt->err->status;
    }
    *loop = (jloop){.refs = 1, .items = items.u.l};
    jv loop_v = {.type = JV_LOOP, .u.loop = loop};
    int flow = FLOW_NEXT;
    for (size_t i = 0; i < items.u.l->n; i++) {
        loop->index0 = i;
        rt->line = st_for->line;
        if ((st = count_iteration(rt))) {
            flow = st;
            break;
        }
        jscope is = {.parent = s};
        if ((st = assign(r, &is, st_for->target, jv_ref(items.u.l->items[i]))) ||
            (st = scope_set(r, &is, "loop", jv_ref(loop_v))))
            flow = st;
        else
            flow = exec_block(r, &is, &st_for->body);
        scope_end(&is);
        if (flow < 0 || flow == FLOW_BREAK)
            break;
        flow = FLOW_NEXT;
    }
    bool ran = items.u.l->n > 0;
    jv_unref(loop_v);
    if (flow < 0)
        return flow;
    if (!ran && st_for->orelse.n) {
        jscope es = {.parent = s};
        flow = exec_block(r, &es, &st_for->orelse);
        scope_end(&es);
        return flow;
    }
    return FLOW_NEXT;
}

static int exec_with(render *r, jscope *s, const jstmt *w)
{
    jscope ws = {.parent = s};
    fk_status st = FK_OK;
    /* The values are evaluated in the enclosing scope, all before any is bound. */
    jv *vals = jrt_alloc(r->rt, (size_t)(w->n_with + 1) * sizeof *vals);
    if (!vals)
        return r->rt->err->status;
    int made = 0;
    for (; made < w->n_with && !st; made++)
        if ((st = eval(r, s, w->values[made], &vals[made])))
            break;
    for (int i = 0; i < made; i++) {
        if (!st)
            st = assign(r, &ws, w->targets[i], vals[i]);
        else
            jv_unref(vals[i]);
    }
    free(vals);
    int flow = st ? st : exec_block(r, &ws, &w->body);
    scope_end(&ws);
    return flow;
}

static int exec_stmt(render *r, jscope *s, const jstmt *x)
{
    jrt *rt = r->rt;
    rt->line = x->line;
    fk_status st = jrt_charge(rt, 1);
    if (st)
        return st;
    jv v;
    switch (x->kind) {
    case JS_DATA: return jbuf_put(rt, r->out, x->text, x->len);
    case JS_OUTPUT: return output(r, s, x->expr);
    case JS_IF: {
        if ((st = eval(r, s, x->expr, &v)))
            return st;
        bool yes = jv_truthy(v);
        jv_unref(v);
        return exec_block(r, s, yes ? &x->body : &x->orelse);
    }
    case JS_FOR: return exec_for(r, s, x);
    case JS_SET:
        if ((st = eval(r, s, x->expr, &v)))
            return st;
        return assign(r, s, x->target, v);
    case JS_SET_BLOCK:
        if ((st = capture(r, s, &x->body, &v)))
            return st;
        if (x->filter) {
            jv f;
            if ((st = apply_filter_chain(r, s, x->filter, v, &f)))
                return st;
            v = f;
        }
        return assign(r, s, x->target, v);
    case JS_FILTER_BLOCK: {
        jv f;
        if ((st = capture(r, s, &x->body, &v)) || (st = apply_filter_chain(r, s, x->filter, v, &f)))
            return st;
        st = jfmt_str(rt, r->out, f);
        jv_unref(f);
        return st;
    }
    case JS_MACRO:
        if ((st = make_closure(r, s, x, &v)))
            return st;
        return scope_set(r, s, x->name, v);
    case JS_CALL_BLOCK: {
        jv caller, result;
        if ((st = make_closure(r, s, x, &caller)))
            return st;
        st = eval_call(r, s, x->expr, caller, &result);
        jv_unref(caller);
        if (st)
            return st;
        st = jbuf_put(rt, r->out, result.u.s->data, result.u.s->len);
        jv_unref(result);
        return st;
    }
    case JS_WITH: return exec_with(r, s, x);
    case JS_SCOPE: {
        jscope inner = {.parent = s};
        int flow = exec_block(r, &inner, &x->body);
        scope_end(&inner);
        return flow;
    }
    case JS_BREAK: return FLOW_BREAK;
    case JS_CONTINUE: return FLOW_CONTINUE;
    }
    return jrt_fail(rt, "cannot execute this statement");
}

static int exec_block(render *r, jscope *s, const jblock *b)
{
    fk_status st = enter(r);
    if (st)
        return st;
    int flow = FLOW_NEXT;
    for (int i = 0; i < b->n && flow == FLOW_NEXT; i++)
        flow = exec_stmt(r, s, b->items[i]);
    r->rt->depth--;
    return flow;
}

fk_status jinja_render(const jinja_template *t, jrt *rt, const jinja_var *vars, size_t n_vars, char **out,
                       size_t *len)
{
    *out = NULL;
    *len = 0;
    jbuf buf = {.max = rt->limits.max_output};
    render r = {.rt = rt, .out = &buf, .vars = vars, .n_vars = n_vars};
    jscope top = {0};
    int flow = exec_block(&r, &top, &t->body);
    scope_end(&top);
    fk_status st = flow < 0 ? flow : FK_OK;
    if (!st && !buf.data)
        st = jbuf_put(rt, &buf, "", 0);
    if (st) {
        jbuf_free(&buf);
        return st;
    }
    *out = buf.data;
    *len = buf.len;
    return FK_OK;
}
