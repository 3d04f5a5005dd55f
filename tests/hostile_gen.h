/* hostile_gen.h — the generators of hostile input by class (docs/ROBUSTNESS.md): names over a
 * hostile alphabet (control bytes, line breaks, tabs, quotes, backslashes, invalid UTF-8, BOMs,
 * LaTeX commands, empty, very long) and numbers over the edges of each domain (NaN, infinities,
 * 1e999, -0, 2.7, 2^63, 2^64, negatives, hex, blanks), with reference verdicts computed
 * without the gate (libc's UTF-8 decoder, strtold). Seeded: a failing case prints its seed. */
#ifndef TKP_HOSTILE_GEN_H
#define TKP_HOSTILE_GEN_H

#include <stddef.h>
#include <stdint.h>

/* The seed of this run: $TOPKP_SEED, else a fixed one (CI replays the same cases). */
uint64_t hostile_seed(void);
uint64_t hostile_next(uint64_t *state);

/* A hostile name into buf (NUL-terminated, no NUL inside); returns its length. */
size_t hostile_name(uint64_t *state, char *buf, size_t cap);
/* The reference: is s[0..len) a name of docs/ROBUSTNESS.md's alphabet? */
int name_expected_ok(const char *s, size_t len);
/* The reference for a path: the same, with '/', '\\' and end spaces allowed, up to 4095 bytes. */
int path_expected_ok(const char *s, size_t len);
/* Every byte of s[0..len) is printable text: valid UTF-8 and no control character (a message
 * or an output line that carries nothing raw; tab and newline allowed when `layout`). */
int printable_text(const char *s, size_t len, int layout);

/* A number's text at the edge of some domain, or a random decimal, into buf. */
void hostile_number(uint64_t *state, char *buf, size_t cap);

/* The reference verdict on `text` in a domain, and its words in the gate's messages. */
enum number_verdict { NUM_OK, NUM_NOT_A_NUMBER, NUM_NOT_FINITE, NUM_NOT_INTEGER, NUM_OUT_OF_RANGE };
enum number_verdict number_expected(const char *text, int integer, long double lo, long double hi);
/* The same for a value already parsed (a Lua number, an array element). */
enum number_verdict value_expected(long double v, int integer, long double lo, long double hi);
const char *number_words(enum number_verdict v);

#endif
