/* test_util.c — helpers shared by the unit tests. */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *path)
{
    fprintf(stderr, "test setup failed: %s %s\n", what, path);
    abort();
}

const char *tu_fixture(const char *rel)
{
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", FK_FIXTURES_DIR, rel);
    return p;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
        die("cannot read", path);
    buf[size] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)size;
    return buf;
}

void tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        die("cannot write", path);
}

cJSON *tu_read_json(const char *path)
{
    char *text = tu_read_file(path, NULL);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        die("invalid JSON in", path);
    return root;
}

char *tu_make_temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char *path = malloc(4096);
    snprintf(path, 4096, "%s/fk-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(path))
        die("cannot create temp dir", path);
    return path;
}

void tu_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            tu_remove_dir(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

void tu_copy_dir(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    if (!d)
        die("cannot open dir", src);
    struct dirent *e;
    while ((e = readdir(d))) {
        char from[4096], to[4096];
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        struct stat sb;
        if (stat(from, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        size_t len;
        char *data = tu_read_file(from, &len);
        tu_write_file(to, data, len);
        free(data);
    }
    closedir(d);
}

uint64_t tu_seed(void)
{
    static uint64_t seed;
    static bool done;
    if (!done) {
        const char *env = getenv("FK_TEST_SEED");
        if (env && *env) {
            seed = strtoull(env, NULL, 10);
        } else {
            FILE *f = fopen("/dev/urandom", "rb");
            if (!f || fread(&seed, sizeof seed, 1, f) != 1)
                seed = (uint64_t)time(NULL);
            if (f)
                fclose(f);
        }
        seed |= 1;
        fprintf(stderr, "random seed: FK_TEST_SEED=%llu\n", (unsigned long long)seed);
        done = true;
    }
    return seed;
}

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

float tu_uniform(uint64_t *state, float lo, float hi)
{
    return lo + (hi - lo) * (float)((next(state) >> 40) * 0x1.0p-24);
}

uint32_t tu_below(uint64_t *state, uint32_t n)
{
    return (uint32_t)((next(state) >> 32) % n);
}

void tu_placeholder_ids(uint64_t *state, const int32_t *want, int n, int32_t *ids, int32_t *sampled, int n_sampled,
                        int vocab)
{
    bool *used = calloc((size_t)n_sampled, sizeof *used);
    if (!used)
        abort();
    for (int r = 0; r < n_sampled; r++)
        sampled[r] = (int32_t)tu_below(state, (uint32_t)vocab);
    for (int i = 0; i < n; i++) {
        ids[i] = want[i];
        if (tu_below(state, 2))
            continue;
        int r = (int)tu_below(state, (uint32_t)n_sampled);
        while (used[r]) /* n_sampled >= n: a free row exists */
            r = (r + 1) % n_sampled;
        used[r] = true;
        sampled[r] = want[i], ids[i] = -1 - r;
    }
    free(used);
}

void tu_write_raw_safetensors(const char *path, uint64_t header_len, const char *header, const void *data,
                              size_t data_len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        die("cannot write", path);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(header_len >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    if (data_len)
        fwrite(data, 1, data_len, f);
    if (fclose(f) != 0)
        die("cannot write", path);
}

void tu_write_safetensors(const char *path, const tu_tensor *t, int n)
{
    cJSON *h = cJSON_CreateObject();
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(e, "dtype", t[i].dtype);
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t[i].ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        cJSON *off = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)offset));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(offset + t[i].nbytes)));
        offset += t[i].nbytes;
    }
    char *header = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    unsigned char *data = malloc(offset ? offset : 1);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(data + at, t[i].data, t[i].nbytes);
        at += t[i].nbytes;
    }
    tu_write_raw_safetensors(path, strlen(header), header, data, offset);
    free(header);
    free(data);
}

void tu_write_json(const char *path, const cJSON *root)
{
    char *text = cJSON_Print(root);
    tu_write_file(path, text, strlen(text));
    free(text);
}

#include "safetensors.h"

void tu_rewrite_weights(const char *src_dir, const char *dst, tu_tensor_edit edit, void *ctx,
                        const tu_tensor *extra, int n_extra)
{
    safetensors *st;
    if (safetensors_open_dir(src_dir, &st, NULL))
        die("cannot open weights of", src_dir);
    int n = safetensors_count(st);
    tu_tensor *out = calloc((size_t)(n + n_extra) + 1, sizeof *out);
    char (*names)[256] = calloc((size_t)n + 1, sizeof *names);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const st_tensor *t = safetensors_at(st, i);
        bool to_f32 = false;
        snprintf(names[kept], sizeof names[kept], "%s", t->name);
        if (edit && !edit(ctx, names[kept], &to_f32))
            continue;
        tu_tensor *o = &out[kept];
        o->name = names[kept];
        o->ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++)
            o->shape[d] = t->shape[d];
        if (to_f32) {
            float *f = malloc((size_t)t->numel * sizeof(float) + 1);
            if (st_tensor_to_f32(t, f, NULL))
                die("cannot convert tensor of", src_dir);
            o->dtype = "F32";
            o->data = f;
            o->nbytes = (size_t)t->numel * sizeof(float);
        } else {
            o->dtype = st_dtype_name(t->dtype);
            void *copy = malloc(t->nbytes + 1);
            if (st_tensor_read(t, copy, NULL))
                die("cannot read tensor of", src_dir);
            o->data = copy;
            o->nbytes = t->nbytes;
        }
        kept++;
    }
    int n_own = kept;
    for (int i = 0; i < n_extra; i++)
        out[kept++] = extra[i];
    tu_write_safetensors(dst, out, kept);
    for (int i = 0; i < n_own; i++)
        free((void *)out[i].data);
    free(out);
    free(names);
    safetensors_close(st);
}
