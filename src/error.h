/* error.h — filling fk_error: a status plus a printf-style message naming what failed. */
#ifndef FK_ERROR_H
#define FK_ERROR_H

#include "flashkernel.h"

/* Sets err (if not NULL) to status and the formatted message; returns status so callers can
 * `return fk_error_set(err, FK_ERR_FORMAT, "%s: ...", path);`. */
fk_status fk_error_set(fk_error *err, fk_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes err's message with a formatted context ("loading layer 3: ") and returns its status. */
fk_status fk_error_prefix(fk_error *err, fk_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
