/* clock.h — seconds on the monotonic clock: every time the load tester measures. */
#ifndef FK_LOADTEST_CLOCK_H
#define FK_LOADTEST_CLOCK_H

double clock_now(void);

#endif
