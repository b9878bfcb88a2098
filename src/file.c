/* file.c — reading a whole file into memory (see file.h). */
#include "file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

fk_status file_read(const char *path, size_t max_bytes, char **out, size_t *len, fk_error *err)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fk_error_set(err, FK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    fk_status st = FK_OK;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = NULL;
    if (size < 0)
        st = fk_error_set(err, FK_ERR_IO, "%s: cannot tell its size: %s", path, strerror(errno));
    else if ((unsigned long)size > max_bytes)
        st = fk_error_set(err, FK_ERR_FORMAT, "%s: file is %ld bytes; at most %zu expected", path, size, max_bytes);
    else if (!(buf = malloc((size_t)size + 1)))
        st = fk_error_set(err, FK_ERR_OUT_OF_MEMORY, "%s: cannot allocate %ld bytes", path, size);
    else if (fseek(f, 0, SEEK_SET) != 0 || fread(buf, 1, (size_t)size, f) != (size_t)size)
        st = fk_error_set(err, FK_ERR_IO, "%s: short read", path);
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    buf[size] = '\0';
    *out = buf;
    *len = (size_t)size;
    return FK_OK;
}
