/* gate.h — the one gate for every text and every number that enters (docs/ROBUSTNESS.md,
 * "Text that enters" and "Numbers that enter"): the alphabet of names, the escaping of any
 * byte string for a message, and one checker per number domain. Every door (config, command
 * line, logits file, options) calls these and no other checker. */
#ifndef TKP_GATE_H
#define TKP_GATE_H

#include <stddef.h>
#include <stdio.h>

#include "../tkp.h"

#define TKP_GATE_NAME_MAX 63 /* bytes of a name (sweep, variant, label, algo, option key...) */

/* 0 when s[0..len) is a name: 1..TKP_GATE_NAME_MAX bytes of valid UTF-8, no control
 * character (C0, DEL, C1), no U+FEFF, U+2028 or U+2029, no '/' or '\', no space first or
 * last, not "." or ".." (an HDF5 group's self and parent). Else TKP_EINVAL with "<what> byte N is \xHH (why): a name is ..." in err; `bad`, when
 * not NULL, gets the 0-based offset of the offending byte (len for an empty or long name). */
int tkp_gate_name(const char *what, const char *s, size_t len, size_t *bad, struct tkp_error *err);

/* The same rule for a path (a config, a logits file, an output): '/' and '\' allowed, and up to
 * 4095 bytes; control bytes, invalid UTF-8, BOM and line separators refused alike. */
int tkp_gate_path(const char *what, const char *s, size_t len, struct tkp_error *err);

/* s[0..len) as printable text for a message or an output that must not carry raw bytes:
 * valid printable UTF-8 as it is, '\' as "\\", every other byte as "\xHH"; cut with "..."
 * when buf is too small. Returns buf. */
const char *tkp_gate_escape(const char *s, size_t len, char *buf, size_t n);

/* The escape of a NUL-terminated s for one message, cut at about 150 bytes, in one of four
 * static buffers (a message may show four; not for threads). */
const char *tkp_gate_shown(const char *s);

/* The same escape, whole, onto out: a text column of a TSV output (export, compare), which
 * then holds no tab, line break or control byte of its own (docs/ROBUSTNESS.md, "Outputs"). */
void tkp_gate_fput_escaped(FILE *out, const char *s);

/* Bytes of the valid UTF-8 sequence at s (at most `avail` bytes), or 0 when s starts none. */
int tkp_utf8_length(const unsigned char *s, size_t avail);

/* A number domain (docs/ROBUSTNESS.md, "Numbers that enter"): its name in messages, whether
 * it holds integers only, and its closed range. Every domain refuses NaN and the infinities. */
struct tkp_domain {
    const char *name;
    int integer;
    double lo, hi;
};

/* The per-row domains of a batch (the logits file's arrays, apply's and gen's flags); the
 * other domains are the config's axes (harness/plan/axes.def: min, max, integer unless F32),
 * the options' table rows and the timing fields (harness/config/limits_config.h). */
extern const struct tkp_domain tkp_dom_k, tkp_dom_p, tkp_dom_min_p, tkp_dom_seed,
    tkp_dom_offset;

/* 0 when v is in domain d; else TKP_EINVAL with "<what> = V is not finite / not an integer /
 * out of range [lo, hi]" in err. */
int tkp_gate_number(const struct tkp_domain *d, const char *what, double v,
                    struct tkp_error *err);

/* Parse the whole decimal text (digits, sign, point, exponent; "nan", "inf" by name) into *out
 * and check it against d. "is not a number" only for text that is none. */
int tkp_gate_number_text(const struct tkp_domain *d, const char *what, const char *text,
                         double *out, struct tkp_error *err);

/* The same for the integer domains whose range passes 2^53 (seeds, offsets: uint64): exact. */
int tkp_gate_u64_text(const struct tkp_domain *d, const char *what, const char *text,
                      unsigned long long *out, struct tkp_error *err);

#endif
