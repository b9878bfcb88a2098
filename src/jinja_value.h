/* jinja_value.h — the values of the chat-template interpreter (Python's, as jinja2 sees them: None, bool, int,
 * float, str, list, tuple, dict, Undefined, namespace, callables, loop) and the per-render runtime they are
 * allocated from, which enforces the sandbox's budgets and carries the error. */
#ifndef FK_JINJA_VALUE_H
#define FK_JINJA_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

typedef enum jv_type {
    JV_UNDEFINED, /* jinja2's Undefined: prints as "", iterates as empty, fails when operated on */
    JV_NONE,
    JV_BOOL,
    JV_INT,       /* int64; arithmetic that leaves the range is an error (Python has big ints) */
    JV_FLOAT,
    JV_STR,       /* UTF-8, immutable */
    JV_LIST,      /* list or tuple, immutable once built (the sandbox forbids append & co.) */
    JV_DICT,      /* insertion-ordered */
    JV_NS,        /* namespace(): the one mutable object, owned by the render */
    JV_FUNC,      /* macro, global function or bound method */
    JV_LOOP,      /* the `loop` variable of a for loop */
} jv_type;

typedef struct jstr jstr;
typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jns jns;
typedef struct jfunc jfunc;
typedef struct jloop jloop;

typedef struct jv {
    jv_type type;
    union {
        bool b;
        int64_t i;
        double f;
        jstr *s;     /* JV_STR; JV_UNDEFINED: why it is undefined ("'x' is undefined"), or NULL */
        jlist *l;
        jdict *d;
        jns *ns;
        jfunc *fn;
        jloop *loop;
    } u;
} jv;

/* A refcount below zero marks an immortal object (a template constant, shared by concurrent renders). */
struct jstr {
    int32_t refs;
    size_t len;     /* bytes */
    size_t ncp;     /* code points */
    char data[];    /* len bytes, then a NUL */
};

struct jlist {
    int32_t refs;
    bool tuple;
    int depth;      /* nesting: 1 + the deepest item's */
    size_t n, cap;
    jv *items;
};

struct jdict {
    int32_t refs;
    int depth;
    size_t n, cap;
    jv *keys, *vals;
};

struct jns {
    jdict *attrs;
    jns *next;          /* every namespace of a render, freed when it ends */
    bool visiting;      /* repr() in progress: a namespace that contains itself prints {...} */
};

typedef enum jfunc_kind { JF_MACRO, JF_GLOBAL, JF_METHOD } jfunc_kind;

struct jstmt;
struct jscope;

struct jfunc {
    int32_t refs;
    jfunc_kind kind;
    int id;                    /* JF_GLOBAL, JF_METHOD: which one (jinja_method.h) */
    const char *name;          /* the macro's or method's name (immortal) */
    const struct jstmt *macro; /* JF_MACRO: the macro, or the call block for `caller` */
    struct jscope *scope;      /* JF_MACRO: where it was defined; NULL once that scope has ended */
    jfunc *next;               /* JF_MACRO: the other closures of that scope */
    jv self;                   /* JF_METHOD: the object it is bound to */
};

struct jloop {
    int32_t refs;
    jlist *items;           /* what the loop iterates, filtered */
    size_t index0;
    bool changed_set;       /* loop.changed() was called: changed holds its last arguments */
    jv changed;
};

/* Budgets of one render (jinja.h: jinja_limits). */
typedef struct jinja_limits {
    int max_depth;             /* nesting: of the template's expressions and blocks when parsing, of evaluation
                                * (macro calls included) when rendering */
    uint64_t max_iterations;   /* loop iterations and macro calls per render */
    uint64_t max_steps;        /* evaluation steps per render: nodes evaluated, items compared or scanned */
    size_t max_output;         /* bytes of rendered text (and of any one block captured by set or a macro) */
    size_t max_alloc;          /* bytes allocated for values over the whole render */
} jinja_limits;

/* Nesting of values (lists and dicts in lists and dicts): JSON readers allow 1000. */
#define JV_MAX_DEPTH 1000

/* The runtime of one render: budgets spent, the namespaces made, the clock, the error. */
typedef struct jrt {
    jinja_limits limits;
    fk_error *err;            /* never NULL (scratch when the caller gave none) */
    fk_error scratch;
    int line;                 /* template line being evaluated, for messages */
    size_t allocated;
    uint64_t steps, iterations;
    int depth;
    jns *namespaces;
    bool fixed_now;           /* strftime_now reads `now` instead of the clock */
    int64_t now;
} jrt;

void jrt_init(jrt *rt, const jinja_limits *limits, fk_error *err);
/* Frees what the render still owns (namespaces). */
void jrt_free(jrt *rt);
/* Fails the render: FK_ERR_FORMAT with "line N: <message>". */
fk_status jrt_fail(jrt *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Spends evaluation steps; FK_ERR_FORMAT once the budget is exceeded. */
fk_status jrt_charge(jrt *rt, uint64_t steps);
/* Allocates from the render's budget (NULL after failing the render when it is spent or malloc fails). */
void *jrt_alloc(jrt *rt, size_t bytes);

/* Growable text: output and str()/repr()/JSON of values. Charged to the render as it grows. */
typedef struct jbuf {
    char *data;
    size_t len, cap, max;     /* max: the size it may not exceed (max_output) */
} jbuf;

fk_status jbuf_put(jrt *rt, jbuf *b, const char *s, size_t len);
fk_status jbuf_putc(jrt *rt, jbuf *b, char c);
fk_status jbuf_printf(jrt *rt, jbuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The text as a new string value (the buffer is emptied). */
fk_status jbuf_to_str(jrt *rt, jbuf *b, jv *out);
void jbuf_free(jbuf *b);

static inline jv jv_undefined(void) { return (jv){.type = JV_UNDEFINED}; }
static inline jv jv_none(void) { return (jv){.type = JV_NONE}; }
static inline jv jv_bool(bool b) { return (jv){.type = JV_BOOL, .u.b = b}; }
static inline jv jv_int(int64_t i) { return (jv){.type = JV_INT, .u.i = i}; }
static inline jv jv_float(double f) { return (jv){.type = JV_FLOAT, .u.f = f}; }

/* Reference counting of the heap values (strings, lists, dicts, functions, loops; undefined's reason). */
jv jv_ref(jv v);
void jv_unref(jv v);
/* Releases *v and leaves None there (failure paths: what they made is gone, and no caller frees it twice). */
void jv_clear(jv *v);

/* A new string holding a copy of s[len] (valid UTF-8). */
fk_status jv_str(jrt *rt, const char *s, size_t len, jv *out);
/* An uninitialized string of len bytes: fill data, then jv_str_done. */
fk_status jv_str_alloc(jrt *rt, size_t len, jstr **out);
jv jv_str_done(jstr *s);
/* An immortal string outside any render (template constants); NULL when malloc fails. */
jstr *jstr_immortal(const char *s, size_t len);
void jstr_free_immortal(jstr *s);

/* An undefined value with the reason printf'd (shown when it is used). */
fk_status jv_undefined_why(jrt *rt, jv *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

fk_status jv_list(jrt *rt, size_t cap, bool tuple, jv *out);
/* Appends item (taking the reference, released on failure). */
fk_status jv_list_push(jrt *rt, jlist *l, jv item);
fk_status jv_dict(jrt *rt, size_t cap, jv *out);
/* Sets key to val (taking both references): a key equal to an existing one (1 == 1.0 == True) keeps the old
 * key's place and object. Unhashable keys (lists, dicts) are a TypeError as in Python. */
fk_status jv_dict_set(jrt *rt, jdict *d, jv key, jv val);
/* The value of key (borrowed), or NULL. Charges the scan. */
fk_status jv_dict_find(jrt *rt, const jdict *d, jv key, const jv **out);
/* Looks up a string key (charges the scan); NULL when absent. */
const jv *jv_dict_get(jrt *rt, const jdict *d, const char *key);

/* A namespace owned by the render. */
fk_status jv_namespace(jrt *rt, jv *out);
fk_status jv_func(jrt *rt, jfunc_kind kind, int id, jv *out);

/* Python truthiness (Undefined is false). */
bool jv_truthy(jv v);
/* Python ==. Charges the comparison. */
fk_status jv_eq(jrt *rt, jv a, jv b, bool *out);
/* Python <, <=, >, >= as a three-way comparison; TypeError between unorderable types. */
fk_status jv_cmp(jrt *rt, jv a, jv b, int *out);
/* Python's type names: "str", "int", "NoneType", "list", "dict", ... */
const char *jv_type_name(jv v);
/* jinja2's object_type_repr: "dict object", "None", ... */
const char *jv_object_name(jv v);
static inline bool jv_is_number(jv v) { return v.type == JV_BOOL || v.type == JV_INT || v.type == JV_FLOAT; }

/* JSON text (strict: src/json.c) as values: objects → dicts, arrays → lists, numbers → int when written without
 * fraction or exponent, else float, as Python's json module reads them. `what` names the text in messages. Text
 * that is not UTF-8, not JSON, holds a NUL character or an integer beyond int64: FK_ERR_INVALID_ARGUMENT. */
fk_status jv_from_json(jrt *rt, const char *text, size_t len, const char *what, jv *out);

#endif
