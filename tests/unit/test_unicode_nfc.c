/* test_unicode_nfc.c — unicode_nfc against the Unicode Consortium's conformance file NormalizationTest.txt (Debian's
 * unicode-data, the version the tables were generated from): for every line c1;c2;c3;c4;c5, NFC(c1) = NFC(c2) =
 * NFC(c3) = c2 and NFC(c4) = NFC(c5) = c4; every code point outside its part 1 is its own NFC; and the prefix of
 * characters below U+0300 that unicode_nfc copies is joined correctly to what follows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unicode_nfc.h"
#include "utf8.h"

#define TEST_FILE "/usr/share/unicode/NormalizationTest.txt.bz2"

/* "0044 0307" → UTF-8 in out (NUL-terminated); returns its length. */
static size_t parse_field(const char *f, const char *end, char *out)
{
    size_t n = 0;
    while (f < end) {
        char *next;
        unsigned long cp = strtoul(f, &next, 16);
        if (next == f)
            break;
        n += (size_t)utf8_put((uint32_t)cp, out + n);
        f = next;
    }
    out[n] = '\0';
    return n;
}

/* NFC(in[len]) is want[want_len]; `where` names the case in the failure message. */
static void expect_nfc(const char *in, size_t len, const char *want, size_t want_len, const char *where)
{
    char *got;
    size_t n;
    assert_true(unicode_nfc(in, len, &got, &n));
    if (n != want_len || memcmp(got, want, n) != 0)
        fail_msg("%s: NFC of a %zu-byte string gave %zu bytes, want %zu", where, len, n, want_len);
    free(got);
}

static void test_conformance(void **state)
{
    (void)state;
    FILE *f = popen("bzcat " TEST_FILE, "r");
    assert_non_null(f);
    static unsigned char in_part1[0x110000];
    char line[1024], c[5][256];
    int part = 0, lineno = 0, checked = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '@') {
            part = atoi(line + 5);
            continue;
        }
        if (line[0] == '#' || line[0] == '\n')
            continue;
        const char *p = line;
        size_t len[5];
        for (int i = 0; i < 5; i++) {
            const char *semi = strchr(p, ';');
            assert_non_null(semi);
            len[i] = parse_field(p, semi, c[i]);
            p = semi + 1;
        }
        if (part == 1) {
            uint32_t cp;
            utf8_next(c[0], len[0], &cp);
            in_part1[cp] = 1;
        }
        char where[64];
        snprintf(where, sizeof where, "line %d", lineno);
        for (int i = 0; i < 3; i++)
            expect_nfc(c[i], len[i], c[1], len[1], where);
        for (int i = 3; i < 5; i++)
            expect_nfc(c[i], len[i], c[3], len[3], where);
        checked++;
    }
    assert_int_equal(pclose(f), 0);
    assert_true(checked > 18000);
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (in_part1[cp] || (cp >= 0xD800 && cp <= 0xDFFF))
            continue;
        char s[4], where[32];
        size_t n = (size_t)utf8_put(cp, s);
        snprintf(where, sizeof where, "U+%04X", (unsigned)cp);
        expect_nfc(s, n, s, n, where);
    }
    printf("%d conformance lines, and every other code point\n", checked);
}

/* Marks after a long run of plain text, and plain text between marks. */
static void test_plain_prefix(void **state)
{
    (void)state;
    expect_nfc("e\xcc\x81", 3, "\xc3\xa9", 2, "e U+0301 → é");
    expect_nfc("abc\xc3\x80\xcc\x96", 7, "abc\xc3\x80\xcc\x96", 7, "À U+0316 stays");
    expect_nfc("abcA\xcc\x96\xcc\x80x", 9, "abc\xc3\x80\xcc\x96x", 8, "A U+0316 U+0300 → À U+0316");
    expect_nfc("\xcc\x81" "e", 3, "\xcc\x81" "e", 3, "a leading mark stays");
    expect_nfc("", 0, "", 0, "empty");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance),
        cmocka_unit_test(test_plain_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
