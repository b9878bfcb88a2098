/* env.h — tuning switches read from the environment, refused with an error that names them when malformed. */
#ifndef FK_ENV_H
#define FK_ENV_H

#include "flashkernel.h"

/* *v = the integer in environment variable `name` if it is set and not empty (left as it was otherwise); a value
 * that is not an integer in [lo, hi] is FK_ERR_INVALID_ARGUMENT, its message naming the variable and the range. */
fk_status fk_env_int(const char *name, int lo, int hi, int *v, fk_error *err);

#endif
