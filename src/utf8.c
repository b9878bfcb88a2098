/* utf8.c — UTF-8 validation, decoding, lossy conversion, clipping and White_Space (see utf8.h). */
#include "utf8.h"

#include <string.h>

int utf8_next(const char *str, size_t n, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    /* The range of the second byte depends on the lead (no overlong forms, no surrogates, <= U+10FFFF). */
    int need;
    unsigned char lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1, v = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2, v = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3, v = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= n || s[i] < lo || s[i] > hi)
            return -i;
        v = v << 6 | (s[i] & 0x3F);
        lo = 0x80, hi = 0xBF;
    }
    *cp = v;
    return need + 1;
}

size_t utf8_check(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        int k = utf8_next(s + i, len - i, &cp);
        if (k < 0)
            return i;
        i += (size_t)k;
    }
    return len;
}

int utf8_put(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_count(const char *s, size_t len)
{
    size_t count = 0;
    for (size_t i = 0; i < len; count++) {
        uint32_t cp;
        int k = utf8_next(s + i, len - i, &cp);
        i += (size_t)(k < 0 ? -k : k);
    }
    return count;
}

size_t utf8_lossy(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = utf8_next(s + i, len - i, &cp);
        if (k > 0) {
            memcpy(out + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(out + o, UTF8_REPLACEMENT, 3);
            o += 3;
            i += (size_t)-k;
        }
    }
    return o;
}

bool utf8_ends_incomplete(const char *s, size_t len)
{
    /* The last sequence starts at most 3 bytes back: the last byte that is not a continuation byte. */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char b = (unsigned char)s[len - back];
        if ((b & 0xC0) == 0x80)
            continue;
        uint32_t cp;
        return b >= 0xC2 && b <= 0xF4 && utf8_next(s + len - back, back, &cp) == -(int)back;
    }
    return false;
}

int utf8_clip(const char *s, int max)
{
    int n = (int)strlen(s);
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

bool utf8_is_white_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}
