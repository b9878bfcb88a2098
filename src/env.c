/* env.c — tuning switches read from the environment (env.h). */
#include "env.h"

#include <stdlib.h>

#include "error.h"

fk_status fk_env_int(const char *name, int lo, int hi, int *v, fk_error *err)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return FK_OK;
    char *end;
    long x = strtol(s, &end, 10);
    if (*end || x < lo || x > hi)
        return fk_error_set(err, FK_ERR_INVALID_ARGUMENT, "%s=\"%s\" (expected an integer in [%d, %d])", name, s, lo,
                            hi);
    *v = (int)x;
    return FK_OK;
}
