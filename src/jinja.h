/* jinja.h — the sandboxed Jinja interpreter behind chat templates: parse a template once, render it any number of
 * times (concurrently) with variables. The language and its output are jinja2 3.1's as transformers configures it
 * (trim_blocks, lstrip_blocks, loop controls, an immutable sandbox); see jinja_ast.h for the constructs. */
#ifndef FK_JINJA_H
#define FK_JINJA_H

#include <stddef.h>

#include "flashkernel.h"
#include "jinja_value.h"

typedef struct jinja_template jinja_template;

/* The sandbox's budgets: 500 levels of nesting, 1,000,000 loop iterations and macro calls, 100,000,000
 * evaluation steps, 64 MiB of output, 1 GiB allocated over a render. */
jinja_limits jinja_limits_default(void);

/* Parses src[len] (UTF-8). A syntax error, a construct outside the supported subset (an unknown filter, test or
 * tag), nesting beyond max_depth: FK_ERR_FORMAT "line N: ...". */
fk_status jinja_parse(const char *src, size_t len, int max_depth, jinja_template **out, fk_error *err);
void jinja_free(jinja_template *t);

typedef struct jinja_var {
    const char *name;
    jv value;           /* borrowed */
} jinja_var;

/* Renders the template with the variables in the runtime rt (jrt_init'd with the limits, clock and error):
 * *out malloc'd and NUL-terminated, *len bytes. raise_exception(msg) fails with FK_ERR_INVALID_ARGUMENT and
 * "TemplateError: msg"; any other failure (a type error, an undefined value used, a limit) is FK_ERR_FORMAT
 * "line N: ...". */
fk_status jinja_render(const jinja_template *t, jrt *rt, const jinja_var *vars, size_t n_vars, char **out,
                       size_t *len);

#endif
