/* dispatch.c — see dispatch.h: the slug of a device, the lookup of a cell's row in a dispatch
 * table and the setting of a row's options that a config left unset (docs/DESIGN.md, "Variants
 * and the dispatch table"). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "dispatch.h"
#include "gpu.h"

/* Does t[0..len) match ^[a-z]+[0-9]+[a-z]*$, letters of either case? */
static int slug_token(const char *t, size_t len)
{
    size_t i = 0;
    while (i < len && isalpha((unsigned char)t[i]))
        i++;
    const size_t letters = i;
    while (i < len && isdigit((unsigned char)t[i]))
        i++;
    const size_t digits = i - letters;
    while (i < len && isalpha((unsigned char)t[i]))
        i++;
    return letters && digits && i == len;
}

void tkp_dispatch_slug(const char *gpu_name, char *slug, size_t n)
{
    slug[0] = 0;
    for (const char *at = gpu_name; *at;) {
        size_t len = 0;
        while (isascii((unsigned char)at[len]) && isalnum((unsigned char)at[len]))
            len++;
        if (slug_token(at, len) && len < n) {
            for (size_t i = 0; i < len; i++)
                slug[i] = (char)tolower((unsigned char)at[i]);
            slug[len] = 0;
            return;
        }
        at += len ? len : 1;
    }
}

const struct tkp_dispatch_row *tkp_dispatch_lookup(const struct tkp_dispatch_row *rows, size_t n,
                                                   const char *slug, const char *module,
                                                   const char *dtype, int64_t batch,
                                                   int64_t vocab, int64_t k)
{
    for (size_t i = 0; i < n; i++) {
        const struct tkp_dispatch_row *r = &rows[i];
        if (strcmp(r->slug, slug) == 0 && strcmp(r->module, module) == 0 &&
            (strcmp(r->dtype, "*") == 0 || strcmp(r->dtype, dtype) == 0) &&
            batch <= r->batch_max && vocab <= r->vocab_max && k <= r->k_max)
            return r;
    }
    return NULL;
}

/* Is option `name` (name_len bytes) of module a in the bitmask `given`? */
static int is_given(const struct tkp_algo *a, unsigned given, const char *name, size_t name_len)
{
    for (const struct tkp_option *o = a->options; o && o->name; o++)
        if (strlen(o->name) == name_len && strncmp(o->name, name, name_len) == 0)
            return (given >> (o - a->options)) & 1u;
    return 0;
}

int tkp_dispatch_apply(const struct tkp_algo *a, void *opts, unsigned given,
                       const struct tkp_dispatch_row *row, struct tkp_error *err)
{
    char assignment[128];
    for (const char *at = row->options; *at;) {
        const size_t len = strcspn(at, ",");
        snprintf(assignment, sizeof assignment, "%.*s", (int)len, at);
        struct tkp_error why;
        if (!is_given(a, given, at, strcspn(assignment, "=")) &&
            tkp_option_assign(a, opts, assignment, &why) != TKP_OK) {
            tkp_error_set(err, "%s: %s", row->where, why.msg);
            return TKP_EINVAL;
        }
        at += len + (at[len] != 0);
    }
    return TKP_OK;
}

int tkp_dispatch_device_slug(char *slug, size_t n)
{
    const char *forced = getenv("TKP_DISPATCH_SLUG");
    struct tkp_gpu_props props;
    struct tkp_error err;
    slug[0] = 0;
    if (forced && *forced)
        snprintf(slug, n, "%s", forced);
    else if (tkp_gpu_count() > 0 && tkp_gpu_props(&props, &err) == TKP_OK)
        tkp_dispatch_slug(props.name, slug, n);
    return slug[0] != 0;
}
