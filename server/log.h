/* log.h — the server's log: one timestamped line per call on stderr. */
#ifndef FK_SERVER_LOG_H
#define FK_SERVER_LOG_H

/* "2025-01-31 12:00:00.123 message\n", written with one call so that lines from threads do not interleave. */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
