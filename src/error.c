/* error.c — fk_error helpers and the names of statuses and finish reasons. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

fk_status fk_error_set(fk_error *err, fk_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

fk_status fk_error_prefix(fk_error *err, fk_status status, const char *fmt, ...)
{
    if (err) {
        char prefix[FK_ERROR_MESSAGE_MAX];
        char old[FK_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, err->message, sizeof old);
        old[sizeof old - 1] = '\0';
        size_t room = sizeof err->message - 1;
        size_t n_prefix = strlen(prefix) < room ? strlen(prefix) : room;
        size_t n_old = strlen(old) < room - n_prefix ? strlen(old) : room - n_prefix;
        memcpy(err->message, prefix, n_prefix);
        memcpy(err->message + n_prefix, old, n_old);
        err->message[n_prefix + n_old] = '\0';
        err->status = status;
    }
    return status;
}

const char *fk_status_name(fk_status status)
{
    switch (status) {
    case FK_OK: return "ok";
    case FK_ERR_INVALID_ARGUMENT: return "invalid argument";
    case FK_ERR_IO: return "i/o error";
    case FK_ERR_FORMAT: return "format error";
    case FK_ERR_UNSUPPORTED: return "unsupported";
    case FK_ERR_OUT_OF_MEMORY: return "out of memory";
    case FK_ERR_DEVICE: return "device error";
    }
    return "unknown status";
}

const char *fk_finish_reason_name(fk_finish_reason reason)
{
    switch (reason) {
    case FK_FINISH_LENGTH: return "length";
    case FK_FINISH_EOS: return "eos";
    case FK_FINISH_STOP: return "stop";
    case FK_FINISH_CANCEL: return "cancel";
    case FK_FINISH_ERROR: return "error";
    case FK_FINISH_NONE: break;
    }
    return "none";
}
