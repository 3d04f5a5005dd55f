/* cli_args.c — the command line's argument helpers (docs/DESIGN.md, "The command line"): an
 * unknown option or extra argument, a missing one, a flag's value, a positional argument,
 * integers and numbers in range (docs/SEMANTICS.md: a NaN is refused), --backend; usage errors
 * exit 2 with a message naming the argument, other errors exit 1 (`fail`). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "cli.h"

/* An argument no rule of `cmd` took: an unknown option or one positional argument too many. */
int bad_arg(const char *cmd, const char *arg)
{
    char shown[160];
    fprintf(stderr, "topkp %s: %s '%s' (see `topkp help %s`)\n", cmd,
            arg[0] == '-' && arg[1] ? "unknown option" : "unexpected argument",
            tkp_gate_escape(arg, strlen(arg), shown, sizeof shown), cmd);
    return 2;
}

/* The value after `flag` through the gate (docs/ROBUSTNESS.md, "Text that enters"): a name, a
 * comma list of names (none empty, the list not empty) or an output path; exits 2 with the
 * gate's message, which names the byte escaped. */
static void refuse_text(const char *cmd, const struct tkp_error *err)
{
    fprintf(stderr, "topkp %s: %s\n", cmd, err->msg);
    exit(2);
}

const char *name_arg(const char *cmd, const char *flag, const char *v)
{
    struct tkp_error err;
    if (tkp_gate_name(flag, v, strlen(v), NULL, &err))
        refuse_text(cmd, &err);
    return v;
}

const char *name_list_arg(const char *cmd, const char *flag, const char *v)
{
    struct tkp_error err;
    char what[96];
    int item = 1;
    for (const char *at = v;; item++) {
        const size_t len = strcspn(at, ",");
        snprintf(what, sizeof what, "%s item %d", flag, item);
        if (tkp_gate_name(what, at, len, NULL, &err))
            refuse_text(cmd, &err);
        if (!at[len])
            return v;
        at += len + 1;
    }
}

const char *path_arg(const char *cmd, const char *flag, const char *v)
{
    struct tkp_error err;
    if (tkp_gate_path(flag, v, strlen(v), &err))
        refuse_text(cmd, &err);
    return v;
}

/* A required argument is missing. */
int missing(const char *cmd, const char *what)
{
    fprintf(stderr, "topkp %s: %s (see `topkp help %s`)\n", cmd, what, cmd);
    return 2;
}

/* The value after the flag argv[*i] (moving *i past it); exits 2 when there is none. */
const char *flag_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "topkp %s: option '%s' needs a value (see `topkp help %s`)\n", cmd,
                tkp_gate_shown(argv[*i]), cmd);
        exit(2);
    }
    return argv[++*i];
}

/* Take argv[i] as the positional argument `slot`, unless it looks like an option or the slot
 * is taken: then it is an error (bad_arg's exit status), else 0. */
int positional(const char *cmd, const char *arg, const char **slot)
{
    if (*slot || (arg[0] == '-' && arg[1]))
        return bad_arg(cmd, arg);
    *slot = arg;
    return 0;
}

int fail(const char *what, const char *msg)
{
    fprintf(stderr, "topkp %s: %s\n", what, msg);
    return 1;
}

/* The flag's value through the gate's parser of its domain (docs/ROBUSTNESS.md, "Numbers that
 * enter"): exits 2 with the gate's words ("not a number", "not an integer", "not finite", "out
 * of range") naming the flag and the value. */
static void refuse_number(const char *cmd, const struct tkp_error *err)
{
    fprintf(stderr, "topkp %s: %s (see `topkp help %s`)\n", cmd, err->msg, cmd);
    exit(2);
}

long long int_arg(const char *cmd, const char *flag, const char *v, long long lo, long long hi)
{
    const struct tkp_domain d = { flag, 1, (double)lo, (double)hi };
    struct tkp_error err;
    double x = 0;
    if (tkp_gate_number_text(&d, flag, v, &x, &err))
        refuse_number(cmd, &err);
    return (long long)x;
}

unsigned long long u64_arg(const char *cmd, const char *flag, const char *v)
{
    const struct tkp_domain d = { flag, 1, 0, 0x1.fffffffffffffp63 };
    struct tkp_error err;
    unsigned long long x = 0;
    if (tkp_gate_u64_text(&d, flag, v, &x, &err))
        refuse_number(cmd, &err);
    return x;
}

float float_arg(const char *cmd, const char *flag, const char *v, const struct tkp_domain *d)
{
    struct tkp_error err;
    double x = 0;
    if (tkp_gate_number_text(d, flag, v, &x, &err))
        refuse_number(cmd, &err);
    return (float)x;
}

enum tkp_backend default_backend(void)
{
#ifdef TKP_HAVE_CUDA
    extern int tkp_gpu_present(void);
    return tkp_gpu_present() ? TKP_GPU : TKP_CPU;
#else
    return TKP_CPU;
#endif
}

enum tkp_backend backend_arg(const char *cmd, const char *v, int plan_only)
{
    (void)plan_only; /* a build with CUDA plans and runs alike */
    if (v && strcmp(v, "cpu") == 0)
        return TKP_CPU;
    if (v && strcmp(v, "gpu") == 0) {
#ifndef TKP_HAVE_CUDA
        if (plan_only)
            return TKP_GPU;
        fprintf(stderr, "topkp %s: this build has no CUDA support (rebuild with nvcc)\n", cmd);
        exit(2);
#endif
        return TKP_GPU;
    }
    char shown[96];
    fprintf(stderr, "topkp %s: --backend is cpu or gpu, got '%s'\n", cmd,
            tkp_gate_escape(v, strlen(v), shown, sizeof shown));
    exit(2);
}
