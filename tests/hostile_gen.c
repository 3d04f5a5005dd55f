/* hostile_gen.c — the hostile input generators and their reference verdicts (hostile_gen.h). */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include "hostile_gen.h"

uint64_t hostile_seed(void)
{
    const char *s = getenv("TOPKP_SEED");
    return s && *s ? strtoull(s, NULL, 0) : 0x39C0FFEEULL;
}

uint64_t hostile_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The hostile alphabet: each piece is one draw. */
static const char *const pieces[] = {
    "a", "Z", "0", "_", "-", ".", " ", ",", "=", "\"", "'", "\\", "/", "\t", "\n", "\r",
    "\x01", "\x1b", "\x7f", "\xc3\xa9", "\xef\xbb\xbf", "\xe2\x80\xa8", "\xc2\x85", "\xc3",
    "\x80", "\xff", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "%", "$", "{", "}", "^",
    "~", "&", "#", "<", "\\input{/etc/passwd}", "\\write18{id}", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
};
#define PIECES (sizeof pieces / sizeof pieces[0])

size_t hostile_name(uint64_t *state, char *buf, size_t cap)
{
    const uint64_t shape = hostile_next(state) % 16;
    size_t n = 0, want = shape == 0 ? 0 : shape == 1 ? 40 + hostile_next(state) % 60
                                                      : 1 + hostile_next(state) % 8;
    const int plain = shape >= 12; /* a quarter: mostly valid names, to reach past the gate */
    buf[0] = 0;
    for (size_t i = 0; i < want; i++) {
        const char *p = plain && hostile_next(state) % 4 ? "abcXYZ09_-. ,\xc3\xa9" + hostile_next(state) % 13
                                                          : pieces[hostile_next(state) % PIECES];
        const size_t len = plain && p[0] != '\xc3' ? 1 : strlen(p);
        if (n + len + 1 > cap)
            break;
        memcpy(buf + n, p, len);
        n += len;
    }
    buf[n] = 0;
    return n;
}

/* Decode s[0..len) with libc's UTF-8 decoder: the code points into cp (at most len), their
 * count, or -1 when a byte is not UTF-8. */
static long decode(const char *s, size_t len, wchar_t *cp)
{
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    locale_t old = uselocale(utf8);
    mbstate_t st;
    memset(&st, 0, sizeof st);
    long n = 0;
    for (size_t i = 0; i < len;) {
        const size_t r = mbrtowc(&cp[n], s + i, len - i, &st);
        if (r == (size_t)-1 || r == (size_t)-2 || r == 0 || (cp[n] >= 0xD800 && cp[n] <= 0xDFFF) ||
            cp[n] > 0x10FFFF) { /* glibc decodes past Unicode's last code point */
            n = -1;
            break;
        }
        i += r, n++;
    }
    uselocale(old);
    freelocale(utf8);
    return n;
}

static int control(wchar_t c)
{
    return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0xFEFF || c == 0x2028 ||
           c == 0x2029;
}

int name_expected_ok(const char *s, size_t len)
{
    wchar_t cp[256];
    if (len == 0 || len > 63 || (len <= 2 && strncmp(s, "..", len) == 0))
        return 0; /* empty, long, or an HDF5 group's self or parent */
    const long n = decode(s, len, cp);
    if (n <= 0 || cp[0] == ' ' || cp[n - 1] == ' ')
        return 0;
    for (long i = 0; i < n; i++)
        if (control(cp[i]) || cp[i] == '/' || cp[i] == '\\')
            return 0;
    return 1;
}

int path_expected_ok(const char *s, size_t len)
{
    wchar_t *cp = malloc((len + 1) * sizeof *cp);
    const long n = len && len <= 4095 && cp ? decode(s, len, cp) : -1;
    int ok = n > 0;
    for (long i = 0; ok && i < n; i++)
        ok = !control(cp[i]);
    free(cp);
    return ok;
}

int printable_text(const char *s, size_t len, int layout)
{
    wchar_t *cp = malloc((len + 1) * sizeof *cp);
    const long n = cp ? decode(s, len, cp) : -1;
    int ok = n >= 0 || len == 0;
    for (long i = 0; ok && i < n; i++)
        ok = !control(cp[i]) || (layout && (cp[i] == '\t' || cp[i] == '\n'));
    free(cp);
    return ok;
}

static const char *const edges[] = {
    "nan", "-nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999", "1e-999", "-0", "0",
    "2.7", "-3.5", "1e20", "-1e20", "9223372036854775807", "9223372036854775808",
    "18446744073709551615", "18446744073709551616", "-1", "4294967296", "2147483647",
    "2147483648", "-2147483648", "-2147483649", "0x10", "", " 1", "1 ", "abc", "+5", "5.", ".5",
    "1e", "1e+", "--1", "3.4028235e38", "3.5e38", "1.0", "1e3", "1E-3", "16777216", "1048577",
    "0.5", "1", "2", "64", "100",
};
#define EDGES (sizeof edges / sizeof edges[0])

void hostile_number(uint64_t *state, char *buf, size_t cap)
{
    const uint64_t r = hostile_next(state);
    if (r % 3)
        snprintf(buf, cap, "%s", edges[(r >> 8) % EDGES]);
    else if (r % 2)
        snprintf(buf, cap, "%lld", (long long)(hostile_next(state) % 2000001) - 1000000);
    else
        snprintf(buf, cap, "%.6g", ((double)(hostile_next(state) % 2000001) - 1e6) / 997.0);
}

enum number_verdict value_expected(long double v, int integer, long double lo, long double hi)
{
    if (isnan(v) || isinf(v))
        return NUM_NOT_FINITE;
    if (integer && v != floorl(v))
        return NUM_NOT_INTEGER;
    return v < lo || v > hi ? NUM_OUT_OF_RANGE : NUM_OK;
}

enum number_verdict number_expected(const char *text, int integer, long double lo, long double hi)
{
    const char *t = text + (*text == '+' || *text == '-');
    if (!strcasecmp(t, "nan") || !strcasecmp(t, "inf") || !strcasecmp(t, "infinity"))
        return NUM_NOT_FINITE;
    size_t digits = strspn(t, "0123456789"), at = digits;
    if (t[at] == '.')
        at++, digits += strspn(t + at, "0123456789"), at += strspn(t + at, "0123456789");
    if (digits && (t[at] == 'e' || t[at] == 'E')) {
        size_t e = at + 1 + (t[at + 1] == '+' || t[at + 1] == '-');
        const size_t ed = strspn(t + e, "0123456789");
        at = ed ? e + ed : (size_t)-1;
    }
    if (!digits || at == (size_t)-1 || t[at])
        return NUM_NOT_A_NUMBER;
    const long double v = strtold(text, NULL);
    if (isinf(v) || fabsl(v) > 1.7976931348623157e308L)
        return NUM_OUT_OF_RANGE;
    /* past 2^53 the gate reads exactly only a uint64's digits: compare as the double it is */
    return value_expected(fabsl(v) < 0x1p53L || strspn(text, "0123456789") == strlen(text)
                              ? v : (long double)(double)v, integer, lo, hi);
}

const char *number_words(enum number_verdict v)
{
    static const char *const words[] = { "", "not a number", "not finite", "not an integer",
                                         "out of range" };
    return words[v];
}
