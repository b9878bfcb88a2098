/* clock.c — seconds on the monotonic clock (not wall time, which may jump). */
#include "clock.h"

#include <time.h>

double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with CLOCK_MONOTONIC on Linux */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
