/* jinja_method.h — what templates can call: methods of strings, dicts, lists and `loop` (as the immutable sandbox
 * allows them), the globals transformers gives a chat template (range, namespace, dict, raise_exception,
 * strftime_now), and the binding of call arguments to parameters. */
#ifndef FK_JINJA_METHOD_H
#define FK_JINJA_METHOD_H

#include <stdbool.h>

#include "jinja_value.h"

/* Arguments of a call: positional, then keyword. */
typedef struct jargs {
    const jv *pos;
    size_t n_pos;
    const char *const *kw_names;
    const jv *kw;
    size_t n_kw;
} jargs;

/* Binds args to the parameters of `fname` (the first n_required are required): slots[i] gets the argument
 * (borrowed) or stays as it was; *given has bit i set for each given one. Too many, unknown or repeated
 * arguments fail the render (Python's TypeError messages). */
fk_status jargs_bind(jrt *rt, const char *fname, const jargs *args, const char *const *params, size_t n_params,
                     size_t n_required, jv *slots, unsigned *given);

/* The method `name` of obj's type (str, dict, list, tuple, loop), or -1. *unsafe: a method the immutable sandbox
 * forbids (append, pop, update, ...): calling it fails. */
int jinja_method_find(jv obj, const char *name, bool *unsafe);
const char *jinja_method_name(int id);
fk_status jinja_method_call(jrt *rt, int id, jv self, const jargs *args, jv *out);

/* The global function `name` (range, namespace, dict, raise_exception, strftime_now), or -1. */
int jinja_global_find(const char *name);
const char *jinja_global_name(int id);
fk_status jinja_global_call(jrt *rt, int id, const jargs *args, jv *out);

#endif
