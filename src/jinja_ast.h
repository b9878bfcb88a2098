/* jinja_ast.h — the parsed chat template: statements and expressions as jinja2's parser builds them (jinja2.nodes),
 * immutable once parsed so that any number of renders can share one template. */
#ifndef FK_JINJA_AST_H
#define FK_JINJA_AST_H

#include <stdbool.h>
#include <stddef.h>

#include "jinja_value.h"

typedef enum jexpr_kind {
    JE_CONST,    /* value */
    JE_NAME,     /* name */
    JE_LIST,     /* args: items */
    JE_TUPLE,    /* args: items */
    JE_DICT,     /* args: key, value, key, value, ... */
    JE_GETATTR,  /* args[0].name */
    JE_GETITEM,  /* args[0][args[1]] */
    JE_SLICE,    /* args[0][args[1]:args[2]:args[3]] (each bound may be NULL) */
    JE_CALL,     /* args[0](args[1..], kw) */
    JE_FILTER,   /* args[0] | name(args[1..], kw); args[0] NULL in `{% filter %}` and `{% set x | f %}` */
    JE_TEST,     /* args[0] is name(args[1..], kw) */
    JE_NOT,      /* not args[0] */
    JE_NEG,      /* -args[0] */
    JE_POS,      /* +args[0] */
    JE_BINOP,    /* args[0] op args[1]: + - * / // % ** */
    JE_AND,      /* args[0] and args[1] */
    JE_OR,       /* args[0] or args[1] */
    JE_CONCAT,   /* args[0] ~ args[1] ~ ... */
    JE_COMPARE,  /* args[0] cmps[0] args[1] cmps[1] args[2] ... (Python's chained comparison) */
    JE_COND,     /* args[1] if args[0] else args[2] (args[2] NULL: undefined) */
    JE_NSREF,    /* name.attr as an assignment target */
} jexpr_kind;

typedef enum jcmp { JC_EQ, JC_NE, JC_LT, JC_LE, JC_GT, JC_GE, JC_IN, JC_NOTIN } jcmp;

typedef struct jexpr jexpr;
struct jexpr {
    jexpr_kind kind;
    int line;
    int op;               /* JE_BINOP: the jop */
    int builtin;          /* JE_FILTER, JE_TEST: the filter or test (jinja_filter.h) */
    const char *name;     /* JE_NAME, JE_GETATTR, JE_FILTER, JE_TEST; JE_NSREF: the namespace */
    const char *attr;     /* JE_NSREF */
    jv value;             /* JE_CONST (immortal) */
    jexpr **args;
    int n_args;
    const char **kw_names;
    jexpr **kw;
    int n_kw;
    jcmp *cmps;           /* JE_COMPARE: n_args - 1 */
};

typedef enum jstmt_kind {
    JS_DATA,         /* text */
    JS_OUTPUT,       /* {{ expr }} */
    JS_IF,           /* if expr: body, else orelse (elif: an if alone in orelse) */
    JS_FOR,          /* for target in expr [if cond]: body, else orelse */
    JS_SET,          /* set target = expr */
    JS_SET_BLOCK,    /* set target [| filter] %}body{% endset */
    JS_MACRO,        /* macro name(params=defaults): body */
    JS_CALL_BLOCK,   /* call[(params)] expr: body is `caller` */
    JS_FILTER_BLOCK, /* filter filter: body */
    JS_WITH,         /* with targets = values: body */
    JS_SCOPE,        /* transformers' {% generation %}: body in its own scope */
    JS_BREAK,
    JS_CONTINUE,
} jstmt_kind;

typedef struct jstmt jstmt;

typedef struct jblock {
    jstmt **items;
    int n;
} jblock;

struct jstmt {
    jstmt_kind kind;
    int line;
    const char *text;     /* JS_DATA */
    size_t len;
    jexpr *expr;
    jexpr *target;        /* JS_FOR, JS_SET, JS_SET_BLOCK: a name, a tuple of targets or a namespace attribute */
    jexpr *cond;          /* JS_FOR */
    jexpr *filter;        /* JS_SET_BLOCK (may be NULL), JS_FILTER_BLOCK */
    jblock body, orelse;
    const char *name;     /* JS_MACRO ("caller" for JS_CALL_BLOCK) */
    const char **params;  /* JS_MACRO, JS_CALL_BLOCK */
    jexpr **defaults;     /* [n_params], NULL where a parameter has no default */
    int n_params;
    bool uses_caller, uses_varargs, uses_kwargs; /* the body names caller / varargs / kwargs */
    jexpr **targets, **values; /* JS_WITH */
    int n_with;
};

typedef struct jarena jarena;

struct jinja_template {
    jblock body;
    jarena *arena;
    jstr **consts;        /* the string constants, freed with the template */
    size_t n_consts;
};

#endif
