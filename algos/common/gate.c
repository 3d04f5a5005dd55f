/* gate.c — the one gate for text and numbers (docs/ROBUSTNESS.md, "Text that enters" and
 * "Numbers that enter"): the name alphabet, escaping for messages, and the number domains. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate.h"

/* The number domains (docs/ROBUSTNESS.md, "Numbers that enter"), one row each. */
const struct tkp_domain tkp_dom_k = { "k", 1, -2147483648.0, 2147483647.0 };
const struct tkp_domain tkp_dom_p = { "p", 0, -3.4028234663852886e38, 3.4028234663852886e38 };
const struct tkp_domain tkp_dom_min_p = { "min_p", 0, -3.4028234663852886e38,
                                          3.4028234663852886e38 };
const struct tkp_domain tkp_dom_seed = { "seed", 1, 0, 0x1.fffffffffffffp63 };
const struct tkp_domain tkp_dom_offset = { "offset", 1, 0, 0x1.fffffffffffffp63 };

int tkp_utf8_length(const unsigned char *s, size_t avail)
{
    if (avail == 0)
        return 0;
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
            : s[0] >= 0xF0 && s[0] <= 0xF4                                ? 4
                                                                          : 0;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range (no overlong or surrogate) */
    if (s[0] == 0xE0)
        lo = 0xA0;
    else if (s[0] == 0xED)
        hi = 0x9F;
    else if (s[0] == 0xF0)
        lo = 0x90;
    else if (s[0] == 0xF4)
        hi = 0x8F;
    if ((size_t)n > avail)
        return 0;
    for (int i = 1; i < n; i++)
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
            return 0;
    return n;
}

/* The code point of the valid n-byte sequence at s. */
static unsigned code_point(const unsigned char *s, int n)
{
    if (n == 1)
        return s[0];
    unsigned c = s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++)
        c = (c << 6) | (s[i] & 0x3F);
    return c;
}

/* Why the character at s (n bytes, n = 0: invalid UTF-8) is outside the alphabet, or NULL. */
static const char *refused_char(const unsigned char *s, int n)
{
    if (n == 0)
        return "not UTF-8";
    const unsigned c = code_point(s, n);
    if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F))
        return "a control character";
    if (c == 0xFEFF)
        return "a byte-order mark";
    if (c == 0x2028 || c == 0x2029)
        return "a line separator";
    if (c == '/')
        return "'/', the HDF5 and path separator";
    if (c == '\\')
        return "'\\', every output's escape character";
    return NULL;
}

#define ALPHABET "a name is 1-63 bytes of printable UTF-8 without '/' or '\\', not '.' or '..' " \
                 "(docs/ROBUSTNESS.md)"
#define PATH_RULE "a path is 1-4095 bytes of printable UTF-8 (docs/ROBUSTNESS.md)"

/* The one checker behind tkp_gate_name and tkp_gate_path: a path may hold '/' and '\' and
 * spaces at its ends, and be longer; nothing else differs. */
static int gate_text(const char *what, const char *s, size_t len, int path, size_t *bad,
                     struct tkp_error *err)
{
    const unsigned char *u = (const unsigned char *)s;
    const char *rule = path ? PATH_RULE : ALPHABET;
    if (bad)
        *bad = len;
    if (len == 0 || len > (path ? 4095u : TKP_GATE_NAME_MAX)) {
        char shown[80];
        if (len == 0)
            tkp_error_set(err, "%s is empty: %s", what, rule);
        else
            tkp_error_set(err, "%s '%s' is %zu bytes, too long: %s", what,
                          tkp_gate_escape(s, len, shown, sizeof shown), len, rule);
        return TKP_EINVAL;
    }
    if (!path && (len == 1 || len == 2) && memcmp(s, "..", len) == 0) {
        if (bad)
            *bad = 0;
        tkp_error_set(err, "%s: byte 1 is \\x2E ('%.*s' alone names an HDF5 group's self or "
                      "parent): %s", what, (int)len, s, rule);
        return TKP_EINVAL;
    }
    for (size_t i = 0; i < len;) {
        const int n = tkp_utf8_length(u + i, len - i);
        const char *why = refused_char(u + i, n);
        if (path && why && (u[i] == '/' || u[i] == '\\'))
            why = NULL;
        if (!path && !why && (i == 0 || i + (size_t)n == len) && u[i] == ' ')
            why = i == 0 ? "a space first" : "a space last";
        if (why) {
            if (bad)
                *bad = i;
            tkp_error_set(err, "%s: byte %zu is \\x%02X (%s): %s", what, i + 1, u[i], why, rule);
            return TKP_EINVAL;
        }
        i += n ? (size_t)n : 1;
    }
    return TKP_OK;
}

int tkp_gate_name(const char *what, const char *s, size_t len, size_t *bad, struct tkp_error *err)
{
    return gate_text(what, s, len, 0, bad, err);
}

int tkp_gate_path(const char *what, const char *s, size_t len, struct tkp_error *err)
{
    return gate_text(what, s, len, 1, NULL, err);
}

/* The escaped form of the character at u (avail bytes left) into piece; returns the bytes it
 * stands for. Printable UTF-8 as it is, '\' as "\\", any other byte as "\xHH". */
static size_t escape_piece(const unsigned char *u, size_t avail, char piece[8])
{
    const int c = tkp_utf8_length(u, avail);
    const char *why = refused_char(u, c);
    if (!why || (c && u[0] == '/')) {
        memcpy(piece, u, (size_t)c);
        piece[c] = 0;
        return (size_t)c;
    }
    if (u[0] == '\\')
        strcpy(piece, "\\\\");
    else
        snprintf(piece, 8, "\\x%02X", u[0]);
    return 1;
}

const char *tkp_gate_escape(const char *s, size_t len, char *buf, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t used = 0;
    if (n == 0)
        return buf;
    buf[0] = 0;
    for (size_t i = 0; i < len;) {
        char piece[8];
        const size_t step = escape_piece(u + i, len - i, piece);
        if (used + strlen(piece) + 4 > n) {
            snprintf(buf + used, n - used, "...");
            return buf;
        }
        used += (size_t)snprintf(buf + used, n - used, "%s", piece);
        i += step;
    }
    return buf;
}

const char *tkp_gate_shown(const char *s)
{
    static char ring[4][160];
    static int next;
    char *buf = ring[next++ % 4];
    return s ? tkp_gate_escape(s, strlen(s), buf, sizeof ring[0]) : "";
}

void tkp_gate_fput_escaped(FILE *out, const char *s)
{
    const size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        char piece[8];
        i += escape_piece((const unsigned char *)s + i, len - i, piece);
        fputs(piece, out);
    }
}

int tkp_gate_number(const struct tkp_domain *d, const char *what, double v, struct tkp_error *err)
{
    if (isnan(v) || isinf(v)) {
        tkp_error_set(err, "%s = %s is not finite (%s; %s is a finite %s)", what,
                      isnan(v) ? "nan" : v > 0 ? "inf" : "-inf",
                      isnan(v) ? "NaN" : "an infinity", d->name,
                      d->integer ? "integer" : "number");
        return TKP_EINVAL;
    }
    if (d->integer && v != floor(v)) {
        tkp_error_set(err, "%s = %.17g is not an integer (%s is an integer in [%.0f, %.0f])",
                      what, v, d->name, d->lo, d->hi);
        return TKP_EINVAL;
    }
    if (v < d->lo || v > d->hi) {
        tkp_error_set(err, d->integer ? "%s = %.17g is out of range (%s is in [%.0f, %.0f])"
                                      : "%s = %.17g is out of range (%s is in [%g, %g])",
                      what, v, d->name, d->lo, d->hi);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* 1 when text is a decimal number: [+-]digits[.digits][(e|E)[+-]digits], a digit somewhere
 * before the exponent. */
static int decimal_syntax(const char *t)
{
    int digits = 0;
    if (*t == '+' || *t == '-')
        t++;
    for (; *t >= '0' && *t <= '9'; t++)
        digits++;
    if (*t == '.')
        for (t++; *t >= '0' && *t <= '9'; t++)
            digits++;
    if (!digits)
        return 0;
    if (*t == 'e' || *t == 'E') {
        t++;
        if (*t == '+' || *t == '-')
            t++;
        if (!(*t >= '0' && *t <= '9'))
            return 0;
        while (*t >= '0' && *t <= '9')
            t++;
    }
    return *t == 0;
}

/* "nan", "inf", "infinity" (any case, with a sign): the value; 0 when text is none of them. */
static int named_special(const char *t, double *v)
{
    const int neg = *t == '-';
    if (*t == '+' || *t == '-')
        t++;
    if (strcasecmp(t, "nan") == 0)
        *v = NAN;
    else if (strcasecmp(t, "inf") == 0 || strcasecmp(t, "infinity") == 0)
        *v = neg ? -INFINITY : INFINITY;
    else
        return 0;
    return 1;
}

int tkp_gate_number_text(const struct tkp_domain *d, const char *what, const char *text,
                         double *out, struct tkp_error *err)
{
    double v;
    char shown[80];
    if (!text)
        text = "";
    if (named_special(text, &v))
        return tkp_gate_number(d, what, v, err);
    if (!decimal_syntax(text)) {
        tkp_error_set(err, "%s: '%s' is not a number (%s is a decimal %s)", what,
                      tkp_gate_escape(text, strlen(text), shown, sizeof shown), d->name,
                      d->integer ? "integer" : "number");
        return TKP_EINVAL;
    }
    errno = 0;
    v = strtod(text, NULL);
    if (errno == ERANGE && isinf(v)) {
        tkp_error_set(err, "%s = %s is out of range (beyond every double; %s is in [%g, %g])",
                      what, text, d->name, d->lo, d->hi);
        return TKP_EINVAL;
    }
    if (errno == ERANGE && d->integer && strspn(text, "+-0.") < strcspn(text, "eE")) {
        tkp_error_set(err, "%s = %s is not an integer (below every double but 0; %s is an "
                      "integer in [%.0f, %.0f])", what, text, d->name, d->lo, d->hi);
        return TKP_EINVAL; /* 1e-999: not 0, and no integer */
    }
    *out = v;
    return tkp_gate_number(d, what, v, err);
}

int tkp_gate_u64_text(const struct tkp_domain *d, const char *what, const char *text,
                      unsigned long long *out, struct tkp_error *err)
{
    double v = 0;
    const int rc = tkp_gate_number_text(d, what, text, &v, err);
    const int digits = text && *text && strspn(text, "0123456789") == strlen(text);
    if (!digits) { /* a sign, a point or an exponent: the double's check is the answer */
        if (!rc)
            *out = (unsigned long long)v;
        return rc;
    }
    errno = 0;
    const unsigned long long x = strtoull(text, NULL, 10); /* exact past 2^53 */
    if (errno == ERANGE || x < (unsigned long long)d->lo) {
        tkp_error_set(err, "%s = %s is out of range (%s is in [%.0f, %llu])", what, text,
                      d->name, d->lo, (unsigned long long)-1);
        return TKP_EINVAL;
    }
    *out = x;
    return TKP_OK;
}
