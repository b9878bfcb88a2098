/* jinja_ops.h — Python's operators on the interpreter's values and jinja2's sandboxed attribute and item access
 * (`x.y` tries the attribute, then the item; `x[y]` the item, then the attribute; a miss is Undefined). */
#ifndef FK_JINJA_OPS_H
#define FK_JINJA_OPS_H

#include <stdbool.h>

#include "jinja_lex.h"
#include "jinja_value.h"

/* Fails the render with why an undefined value cannot be used ("'x' is undefined"). */
fk_status jv_fail_undefined(jrt *rt, jv u);

/* obj.name: a method, a dict's key, a namespace's attribute, loop.index, ...; Undefined when there is none. */
fk_status jv_getattr(jrt *rt, jv obj, const char *name, jv *out);
/* obj[key], negative indexes counting from the end; Undefined when there is none. */
fk_status jv_getitem(jrt *rt, jv obj, jv key, jv *out);
/* obj[start:stop:step] of a string, list or tuple (a bound is JV_NONE when omitted). */
fk_status jv_slice(jrt *rt, jv obj, jv start, jv stop, jv step, jv *out);

/* a op b for + - * / // % ** (jop values). */
fk_status jv_binop(jrt *rt, jop op, jv a, jv b, jv *out);
/* -a (neg) or +a. */
fk_status jv_unary(jrt *rt, bool neg, jv a, jv *out);
/* `item in container`. */
fk_status jv_contains(jrt *rt, jv container, jv item, bool *out);
/* len(v): code points of a string, items of a list or dict, 0 for Undefined. */
fk_status jv_len(jrt *rt, jv v, int64_t *out);
/* What iterating v yields, as a list: a list's items, a dict's keys, a string's characters, nothing for Undefined. */
fk_status jv_iter(jrt *rt, jv v, jv *out);

#endif
