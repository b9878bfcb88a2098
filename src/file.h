/* file.h — reading a whole file into memory, with a size limit and errors naming the file. */
#ifndef FK_FILE_H
#define FK_FILE_H

#include <stddef.h>

#include "flashkernel.h"

/* Reads path (at most max_bytes) into *out, malloc'd and NUL-terminated, *len bytes. A missing or unreadable file
 * is FK_ERR_IO, a larger one FK_ERR_FORMAT. */
fk_status file_read(const char *path, size_t max_bytes, char **out, size_t *len, fk_error *err);

#endif
