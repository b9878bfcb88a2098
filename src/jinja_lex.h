/* jinja_lex.h — the chat-template lexer: template text to tokens, as jinja2's lexer with transformers' settings
 * (trim_blocks, lstrip_blocks, `-`/`+` whitespace control, newlines normalized, one trailing newline dropped). */
#ifndef FK_JINJA_LEX_H
#define FK_JINJA_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "flashkernel.h"

typedef enum jtok_type {
    JT_DATA,        /* template text to output */
    JT_VAR_BEGIN,   /* {{ */
    JT_VAR_END,     /* }} */
    JT_BLOCK_BEGIN, /* {% */
    JT_BLOCK_END,   /* %} */
    JT_NAME,
    JT_STRING,      /* text: the decoded value */
    JT_INT,
    JT_FLOAT,
    JT_OP,
    JT_EOF,
} jtok_type;

typedef enum jop {
    JOP_ADD, JOP_SUB, JOP_MUL, JOP_DIV, JOP_FLOORDIV, JOP_MOD, JOP_POW, JOP_TILDE,
    JOP_LBRACKET, JOP_RBRACKET, JOP_LPAREN, JOP_RPAREN, JOP_LBRACE, JOP_RBRACE,
    JOP_EQ, JOP_NE, JOP_GT, JOP_GTEQ, JOP_LT, JOP_LTEQ,
    JOP_ASSIGN, JOP_DOT, JOP_COLON, JOP_PIPE, JOP_COMMA, JOP_SEMICOLON,
} jop;

typedef struct jtoken {
    jtok_type type;
    int line;
    jop op;            /* JT_OP */
    const char *text;  /* JT_DATA, JT_NAME, JT_STRING: bytes (not NUL-terminated) */
    size_t len;
    int64_t i;         /* JT_INT */
    double f;          /* JT_FLOAT */
} jtoken;

typedef struct jlexed {
    jtoken *toks;      /* ends with JT_EOF */
    size_t n;
    char *source;      /* the normalized text that the tokens point into */
    char *strings;     /* the decoded string literals */
} jlexed;

/* Tokenizes src[len] (valid UTF-8). Errors: FK_ERR_FORMAT "line N: ...". */
fk_status jinja_lex(const char *src, size_t len, jlexed *out, fk_error *err);
void jinja_lex_free(jlexed *lx);

/* The operator's text ("+", "//", ...). */
const char *jinja_op_text(jop op);

#endif
