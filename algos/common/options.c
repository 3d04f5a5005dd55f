/* options.c — the generic option machinery: every module declares a static table of
 * `struct tkp_option` and this file parses, validates, prints and defaults it, so no module
 * writes its own parser (FFmpeg AVOption style). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tkp.h"
#include "gate.h"

/* Bytes kept at each end of a long word (a path, most often) that a message shortens. */
#define WORD_KEEP 48

/* Cut the longest word (run of bytes other than spaces) of text[0..*len) longer than
 * 2 * WORD_KEEP + 3 in its middle, "..." in place of what goes; 0 when there is none. */
static int cut_longest_word(char *text, size_t *len)
{
    size_t best = 0, best_len = 0;
    for (size_t i = 0; i < *len;) {
        size_t j = i;
        while (j < *len && text[j] != ' ')
            j++;
        if (j - i > best_len)
            best = i, best_len = j - i;
        i = j + 1;
    }
    if (best_len <= 2 * WORD_KEEP + 3)
        return 0;
    char *from = text + best + best_len - WORD_KEEP, *to = text + best + WORD_KEEP;
    memcpy(to, "...", 3);
    memmove(to + 3, from, (size_t)(text + *len - from) + 1);
    *len -= best_len - (2 * WORD_KEEP + 3);
    return 1;
}

/* text into dst[n]: whole when it fits; else its long words (paths) cut in their middles,
 * longest first, so that the reason around them is kept (docs/ROBUSTNESS.md, "Messages cut
 * short"); else its head and its tail around "...". */
static void fit_message(char *dst, size_t n, char *text, size_t len)
{
    while (len >= n && cut_longest_word(text, &len))
        ;
    if (len < n) {
        memcpy(dst, text, len + 1);
        return;
    }
    const size_t head = (n - 4) / 2, tail = n - 4 - head;
    memcpy(dst, text, head);
    memcpy(dst + head, "...", 3);
    memcpy(dst + head + 3, text + len - tail, tail);
    dst[n - 1] = 0;
}

void tkp_error_vset(struct tkp_error *err, const char *fmt, va_list ap)
{
    if (!err)
        return;
    va_list again;
    va_copy(again, ap);
    char first[sizeof err->msg]; /* not err->msg itself: an argument may be err->msg */
    const int len = vsnprintf(first, sizeof first, fmt, ap);
    char *text = len >= (int)sizeof first ? malloc((size_t)len + 1) : NULL;
    if (text) {
        vsnprintf(text, (size_t)len + 1, fmt, again);
        fit_message(err->msg, sizeof err->msg, text, (size_t)len);
        free(text);
    } else {
        memcpy(err->msg, first, sizeof first);
    }
    va_end(again);
}

void tkp_error_set(struct tkp_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tkp_error_vset(err, fmt, ap);
    va_end(ap);
}

const struct tkp_option *tkp_option_find(const struct tkp_algo *a, const char *name)
{
    for (const struct tkp_option *o = a->options; o && o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

static void store(const struct tkp_option *o, void *opts, double v)
{
    char *base = (char *)opts + o->offset;
    if (o->type == TKP_OPT_DOUBLE)
        *(double *)base = v;
    else
        *(int *)base = (int)v;
}

static double load(const struct tkp_option *o, const void *opts)
{
    const char *base = (const char *)opts + o->offset;
    return o->type == TKP_OPT_DOUBLE ? *(const double *)base : (double)*(const int *)base;
}

void tkp_options_defaults(const struct tkp_algo *a, void *opts)
{
    memset(opts, 0, a->opts_size);
    for (const struct tkp_option *o = a->options; o && o->name; o++)
        store(o, opts, o->def);
}

static void list_choices(const struct tkp_option *o, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; o->choices[i] && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", o->choices[i]);
}

/* The option `name` of module a, or NULL with the error set. */
static const struct tkp_option *find_or_fail(const struct tkp_algo *a, const char *name,
                                             struct tkp_error *err)
{
    const struct tkp_option *o = tkp_option_find(a, name);
    char shown[96];
    if (!o)
        tkp_error_set(err, "%s has no option '%s'", a->name,
                      tkp_gate_escape(name, strlen(name), shown, sizeof shown));
    return o;
}

int tkp_option_set_number(const struct tkp_algo *a, void *opts, const char *name, double v,
                          struct tkp_error *err)
{
    const struct tkp_option *o = find_or_fail(a, name, err);
    if (!o)
        return TKP_EINVAL;
    if (TKP_OPT_IS_ENUM(o)) {
        int count = 0;
        while (o->choices[count])
            count++;
        if (v != floor(v) || v < 0 || v >= count) {
            char names[256];
            list_choices(o, names, sizeof names);
            tkp_error_set(err, "%s option %s: %g is not one of %s", a->name, name, v, names);
            return TKP_EINVAL;
        }
    } else {
        const struct tkp_domain d = { name, o->type == TKP_OPT_INT, o->min, o->max };
        char what[96];
        snprintf(what, sizeof what, "%s option %s", a->name, name);
        if (tkp_gate_number(&d, what, v, err))
            return TKP_EINVAL;
    }
    store(o, opts, v);
    return TKP_OK;
}

int tkp_option_set(const struct tkp_algo *a, void *opts, const char *name, const char *value,
                   struct tkp_error *err)
{
    const struct tkp_option *o = find_or_fail(a, name, err);
    if (!o)
        return TKP_EINVAL;
    if (TKP_OPT_IS_ENUM(o)) {
        for (int i = 0; o->choices[i]; i++)
            if (strcmp(o->choices[i], value) == 0)
                return tkp_option_set_number(a, opts, name, i, err);
        char names[256], shown[96];
        list_choices(o, names, sizeof names);
        tkp_error_set(err, "%s option %s: '%s' is not one of %s", a->name, name,
                      tkp_gate_escape(value, strlen(value), shown, sizeof shown), names);
        return TKP_EINVAL;
    }
    const struct tkp_domain d = { name, o->type == TKP_OPT_INT, o->min, o->max };
    char what[96];
    double v = 0;
    snprintf(what, sizeof what, "%s option %s", a->name, name);
    if (tkp_gate_number_text(&d, what, value, &v, err))
        return TKP_EINVAL;
    return tkp_option_set_number(a, opts, name, v, err);
}

void tkp_option_value(const struct tkp_option *o, const void *opts, char *buf, size_t n)
{
    double v = load(o, opts);
    if (TKP_OPT_IS_ENUM(o))
        snprintf(buf, n, "%s", o->choices[(int)v]);
    else if (o->type == TKP_OPT_INT)
        snprintf(buf, n, "%d", (int)v);
    else
        snprintf(buf, n, "%g", v);
}

/* The options of `a` whose bit is in `mask`, less a quiet enum at its default when
 * `skip_quiet_defaults`, as "name=value" joined by commas. */
static void format_options(const struct tkp_algo *a, const void *opts, unsigned mask,
                           int skip_quiet_defaults, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (const struct tkp_option *o = a->options; o && o->name && used < n; o++) {
        char val[64];
        const long at = (long)(o - a->options); /* past 32: no bit (no module has as many) */
        if ((at < 32 && !((mask >> at) & 1u)) ||
            (skip_quiet_defaults && o->type == TKP_OPT_ENUM_QUIET &&
             (int)load(o, opts) == (int)o->def))
            continue;
        tkp_option_value(o, opts, val, sizeof val);
        used += (size_t)snprintf(buf + used, n - used, "%s%s=%s", used ? "," : "", o->name, val);
    }
}

void tkp_options_format(const struct tkp_algo *a, const void *opts, char *buf, size_t n)
{
    format_options(a, opts, ~0u, 1, buf, n);
}

void tkp_options_format_given(const struct tkp_algo *a, const void *opts, unsigned given,
                              char *buf, size_t n)
{
    format_options(a, opts, given, 0, buf, n);
}

int tkp_env_cluster(const char *name, int *size, struct tkp_error *err)
{
    *size = 0;
    const char *v = getenv(name);
    if (!v || !*v)
        return TKP_OK;
    char *end = NULL;
    errno = 0;
    const long c = strtol(v, &end, 10);
    if (errno || *end || (c != 1 && c != 2 && c != 4 && c != 8 && c != 16)) {
        tkp_error_set(err, "%s=%s: a cluster size is 1, 2, 4, 8 or 16 CTAs", name, v);
        return TKP_EINVAL;
    }
    *size = (int)c;
    return TKP_OK;
}

const char *const tkp_cluster_choices[] = { "auto", "1", "2", "4", "8", "16", NULL };

int tkp_forced_cluster(int option, const char *env, int *size, struct tkp_error *err)
{
    if (option > 0 && option <= 5) {
        *size = 1 << (option - 1);
        return TKP_OK;
    }
    return tkp_env_cluster(env, size, err);
}
