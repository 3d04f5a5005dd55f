/* cli_args.c — the command line's argument helpers (docs/DESIGN.md, "The command line"): an
 * unknown option or extra argument, a missing one, a flag's value, a positional argument,
 * integers and numbers in range (docs/SEMANTICS.md: a NaN is refused), --backend; usage errors
 * exit 2 with a message naming the argument, other errors exit 1 (`fail`). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* An argument no rule of `cmd` took: an unknown option or one positional argument too many. */
int bad_arg(const char *cmd, const char *arg)
{
    fprintf(stderr, "topkp %s: %s '%s' (see `topkp help %s`)\n", cmd,
            arg[0] == '-' && arg[1] ? "unknown option" : "unexpected argument", arg, cmd);
    return 2;
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
                argv[*i], cmd);
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

/* Parse a whole integer (or a float for p) argument; exits with a message naming it. */
long long int_arg(const char *cmd, const char *flag, const char *v, long long lo,
                         long long hi)
{
    char *end;
    errno = 0;
    long long x = strtoll(v ? v : "", &end, 10);
    if (!v || end == v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "topkp %s: %s needs an integer in [%lld, %lld], got '%s'\n", cmd, flag,
                lo, hi, v ? v : "");
        exit(2);
    }
    return x;
}

float float_arg(const char *cmd, const char *flag, const char *v)
{
    char *end;
    float x = strtof(v ? v : "", &end);
    if (!v || end == v || *end || isnan(x)) {
        fprintf(stderr, "topkp %s: %s needs a number, got '%s'\n", cmd, flag, v ? v : "");
        exit(2);
    }
    return x;
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

enum tkp_backend backend_arg(const char *cmd, const char *v)
{
    if (v && strcmp(v, "cpu") == 0)
        return TKP_CPU;
    if (v && strcmp(v, "gpu") == 0) {
#ifndef TKP_HAVE_CUDA
        fprintf(stderr, "topkp %s: this build has no CUDA support (rebuild with nvcc)\n", cmd);
        exit(2);
#endif
        return TKP_GPU;
    }
    fprintf(stderr, "topkp %s: --backend is cpu or gpu, got '%s'\n", cmd, v ? v : "");
    exit(2);
}
