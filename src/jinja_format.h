/* jinja_format.h — values as text: Python's str() and repr() (what `{{ }}`, `~` and the string filter print) and
 * JSON as transformers' tojson writes it (Python's json.dumps). */
#ifndef FK_JINJA_FORMAT_H
#define FK_JINJA_FORMAT_H

#include "jinja_value.h"

/* repr() of a float, Python's shortest round-trip form: "1.0", "0.1", "1e+16", "1e-05", "inf", "nan". */
void jfmt_float(double v, char out[32]);

/* Appends str(v): a string as is, Undefined as "", None as "None", containers as their repr(). */
fk_status jfmt_str(jrt *rt, jbuf *b, jv v);
/* Appends repr(v). */
fk_status jfmt_repr(jrt *rt, jbuf *b, jv v);
/* str(v) as a string value (a new reference; v itself when it is a string). */
fk_status jv_to_str(jrt *rt, jv v, jv *out);

/* json.dumps' options as transformers' tojson passes them. */
typedef struct jjson_opts {
    bool ensure_ascii;       /* non-ASCII as \uXXXX (transformers: false) */
    bool indent_set;         /* indent given: newlines, and `indent` before items */
    const char *indent;
    size_t indent_len;
    const char *item_sep, *key_sep;  /* NULL: Python's defaults (", " or "," with indent, and ": ") */
    size_t item_sep_len, key_sep_len;
    bool sort_keys;
} jjson_opts;

/* Appends json.dumps(v); values JSON cannot hold (Undefined, namespaces, functions) are a TypeError. */
fk_status jfmt_json(jrt *rt, jbuf *b, jv v, const jjson_opts *o);

#endif
