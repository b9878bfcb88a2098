/* jinja_str.h — Python's str methods on UTF-8 text, as chat templates call them (strip, split, replace, case,
 * find, ...), with Python's whitespace and case tables. Indexes and counts are in code points, as in Python. */
#ifndef FK_JINJA_STR_H
#define FK_JINJA_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jinja_value.h"

/* str.isspace() of one code point (also what `\s` matches in Python's re). */
bool pystr_isspace(uint32_t cp);
/* str.isprintable() of one code point (repr() escapes the others). */
bool pystr_isprintable(uint32_t cp);

/* The code point at s[*at] (valid UTF-8), advancing *at. */
uint32_t pystr_next(const char *s, size_t *at);
/* Byte offset of code point `index` (0 <= index <= code points) of s[len]. */
size_t pystr_offset(const char *s, size_t len, size_t index);

typedef enum pystr_side { PYSTR_LEFT = 1, PYSTR_RIGHT = 2, PYSTR_BOTH = 3 } pystr_side;
/* str.strip/lstrip/rstrip: the kept part of s[len] as [*start, *end); chars NULL strips whitespace. */
void pystr_strip(const char *s, size_t len, const jstr *chars, pystr_side side, size_t *start, size_t *end);

/* str.split / str.rsplit (sep NULL: runs of whitespace); maxsplit < 0: no limit. A list of strings. */
fk_status pystr_split(jrt *rt, const jstr *s, const jstr *sep, int64_t maxsplit, bool right, jv *out);
/* str.splitlines(keepends). */
fk_status pystr_splitlines(jrt *rt, const jstr *s, bool keepends, jv *out);
/* str.replace(old, new, count); count < 0: all. */
fk_status pystr_replace(jrt *rt, const jstr *s, const jstr *old, const jstr *rep, int64_t count, jv *out);
/* The searches below are charged to the render as scans and return -2 once its step budget is spent (the render
 * has failed). */
/* str.find / str.rfind: code point index or -1. */
int64_t pystr_find(jrt *rt, const jstr *s, const jstr *sub, bool right);
/* str.count (non-overlapping). */
int64_t pystr_count(jrt *rt, const jstr *s, const jstr *sub);
/* Byte offset of the first occurrence of needle in hay, or -1. */
int64_t pystr_search(jrt *rt, const char *hay, size_t hay_len, const char *needle, size_t needle_len);

typedef enum pystr_case {
    PYSTR_UPPER,
    PYSTR_LOWER,
    PYSTR_CAPITALIZE, /* str.capitalize: first character upper, the rest lower */
    PYSTR_TITLE,      /* str.title: upper after a non-cased character, lower after a cased one */
    PYSTR_WORDS,      /* jinja2's title filter: upper after one of "-({[<" or whitespace, lower elsewhere */
} pystr_case;
/* Case conversion with Python's mappings (Unicode's, including one-to-many such as "ß" → "SS"). */
fk_status pystr_case_map(jrt *rt, const jstr *s, pystr_case mode, jv *out);

#endif
