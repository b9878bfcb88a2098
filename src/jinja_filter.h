/* jinja_filter.h — jinja2's builtin filters (`x | f(...)`) and tests (`x is t(...)`) as chat templates use them,
 * with transformers' tojson (json.dumps, ensure_ascii=False, indent/separators/sort_keys passed through). */
#ifndef FK_JINJA_FILTER_H
#define FK_JINJA_FILTER_H

#include <stdbool.h>

#include "jinja_method.h"
#include "jinja_value.h"

/* The filter or test called `name`, or -1. */
int jinja_filter_find(const char *name);
int jinja_test_find(const char *name);
/* True when jinja2 has a filter of that name that is not implemented here (for the parser's message). */
bool jinja_filter_is_builtin(const char *name);

fk_status jinja_filter_apply(jrt *rt, int id, jv value, const jargs *args, jv *out);
fk_status jinja_test_apply(jrt *rt, int id, jv value, const jargs *args, bool *out);

#endif
