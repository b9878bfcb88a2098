/* fuzz_files.c — the scratch directory of a harness and the files it writes there (see fuzz_files.h). */
#include "fuzz_files.h"

#include <dirent.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        char path[PATH_MAX + 256];
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
}

const char *fuzz_dir(void)
{
    if (!dir[0]) {
        /* In memory when it can be: a file written per execution on a disk costs milliseconds, in tmpfs microseconds */
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0])
            tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/fk-fuzz-XXXXXX", tmp);
        CHECK(mkdtemp(dir), "cannot make a scratch directory under %s", tmp);
        atexit(remove_dir);
    }
    return dir;
}

const char *fuzz_write(const char *name, const void *data, size_t len)
{
    static char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "cannot write %s", path);
    return path;
}

void fuzz_remove(const char *name)
{
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    unlink(path);
}
