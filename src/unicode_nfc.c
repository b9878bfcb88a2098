/* unicode_nfc.c — NFC as UAX #15 defines it: full canonical decomposition (Hangul arithmetically), canonical
 * ordering of combining marks, then canonical composition of each mark or Hangul jamo with the last starter it is not
 * blocked from. Tables: unicode_nfc_tables.h (tools/gen_unicode_nfc.py). */
#include "unicode_nfc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_nfc_tables.h"
#include "utf8.h"

/* Hangul syllables: S = S_BASE + (L - L_BASE) * N_COUNT + (V - V_BASE) * T_COUNT + (T - T_BASE). */
#define S_BASE 0xAC00u
#define L_BASE 0x1100u
#define V_BASE 0x1161u
#define T_BASE 0x11A7u
#define L_COUNT 19u
#define V_COUNT 21u
#define T_COUNT 28u
#define N_COUNT (V_COUNT * T_COUNT)
#define S_COUNT (L_COUNT * N_COUNT)

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Index of key in the first column of a sorted table of `n` rows of `width` uint32s, or -1. */
static long find(const uint32_t *table, size_t n, size_t width, uint32_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t k = table[mid * width];
        if (k == key)
            return (long)mid;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static unsigned ccc(uint32_t cp)
{
    long i = find(&NFC_CCC[0][0], COUNT(NFC_CCC), 2, cp);
    return i < 0 ? 0 : NFC_CCC[i][1];
}

/* The primary composite of a + b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a - L_BASE < L_COUNT && b - V_BASE < V_COUNT)
        return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
    if (a - S_BASE < S_COUNT && (a - S_BASE) % T_COUNT == 0 && b - T_BASE - 1 < T_COUNT - 1)
        return a + (b - T_BASE);
    long i = find(&NFC_COMPOSE[0][0], COUNT(NFC_COMPOSE), 3, a);
    if (i < 0)
        return 0;
    while (i > 0 && NFC_COMPOSE[i - 1][0] == a) /* the first row of a's run */
        i--;
    for (; (size_t)i < COUNT(NFC_COMPOSE) && NFC_COMPOSE[i][0] == a; i++)
        if (NFC_COMPOSE[i][1] == b)
            return NFC_COMPOSE[i][2];
    return 0;
}

/* Appends the full canonical decomposition of cp (at most 4 code points) to d[n]; returns the new length. */
static size_t decompose(uint32_t cp, uint32_t *d, size_t n)
{
    if (cp - S_BASE < S_COUNT) {
        uint32_t s = cp - S_BASE;
        d[n++] = L_BASE + s / N_COUNT;
        d[n++] = V_BASE + s % N_COUNT / T_COUNT;
        if (s % T_COUNT)
            d[n++] = T_BASE + s % T_COUNT;
        return n;
    }
    long i = find(&NFC_DECOMP[0][0], COUNT(NFC_DECOMP), 3, cp);
    if (i < 0) {
        d[n++] = cp;
        return n;
    }
    memcpy(d + n, NFC_DECOMP_POOL + NFC_DECOMP[i][1], NFC_DECOMP[i][2] * sizeof *d);
    return n + NFC_DECOMP[i][2];
}

/* Canonical ordering: each run of non-starters stably sorted by combining class. */
static void reorder(uint32_t *d, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t c = d[i];
        unsigned cc = ccc(c);
        size_t j = i;
        while (cc && j > 0 && ccc(d[j - 1]) > cc) {
            d[j] = d[j - 1];
            j--;
        }
        d[j] = c;
    }
}

/* Canonical composition in place; returns the new length. */
static size_t recompose(uint32_t *d, size_t n)
{
    size_t starter = 0, k = 1;
    unsigned last = ccc(d[0]) ? 256 : 0; /* a leading non-starter has no starter to join */
    for (size_t i = 1; i < n; i++) {
        uint32_t c = d[i], composite;
        unsigned cc = ccc(c);
        if ((last == 0 || last < cc) && (composite = compose(d[starter], c))) {
            d[starter] = composite;
            continue;
        }
        if (cc == 0)
            starter = k;
        last = cc;
        d[k++] = c;
    }
    return k;
}

bool unicode_nfc(const char *s, size_t len, char **out, size_t *out_len)
{
    /* Below U+0300 (lead bytes below 0xCC) every character is NFC by itself; work from the last one of those, which
     * may compose with what follows. */
    size_t plain = 0;
    while (plain < len && (unsigned char)s[plain] < 0xCC)
        plain++;
    if (plain < len && plain > 0)
        do
            plain--;
        while (plain > 0 && ((unsigned char)s[plain] & 0xC0) == 0x80);
    /* No decomposition is longer than 4 code points, so 4 per input byte bounds the decomposed text. */
    uint32_t *d = malloc((4 * (len - plain) + 1) * sizeof *d);
    size_t n = 0;
    for (size_t i = plain; d && i < len;) {
        uint32_t cp;
        i += (size_t)utf8_next(s + i, len - i, &cp);
        n = decompose(cp, d, n);
    }
    if (n) {
        reorder(d, n);
        n = recompose(d, n);
    }
    char *o = d ? malloc(plain + 4 * n + 1) : NULL;
    if (!o) {
        free(d);
        return false;
    }
    memcpy(o, s, plain);
    size_t k = plain;
    for (size_t i = 0; i < n; i++)
        k += (size_t)utf8_put(d[i], o + k);
    o[k] = '\0';
    free(d);
    *out = o;
    *out_len = k;
    return true;
}
