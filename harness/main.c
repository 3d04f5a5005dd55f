/* main.c — the topkp command line. Each subcommand is one row of `commands` (name, summary,
 * usage text, function), near the end of this file:
 *   topkp list | run | apply | gen | export | compare | info   (topkp help CMD: its flags)
 *   topkp --help, -h, help [CMD], CMD --help: usage on stdout, exit 0; topkp --version
 * Usage errors (an unknown option, an extra argument, a bad value) exit 2 with a message naming
 * the argument; other errors go to stderr with exit 1. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../datasets/datasets.h"
#include "apply.h"
#include "axes.h"
#include "compare.h"
#include "h5util.h"
#include "limits.h"
#include "logits_file.h"
#include "peer_cell.h"
#include "provenance.h"
#include "results.h"
#include "runner.h"
#include "timing.h"
#include "version.h"

/* An argument no rule of `cmd` took: an unknown option or one positional argument too many. */
static int bad_arg(const char *cmd, const char *arg)
{
    fprintf(stderr, "topkp %s: %s '%s' (see `topkp help %s`)\n", cmd,
            arg[0] == '-' && arg[1] ? "unknown option" : "unexpected argument", arg, cmd);
    return 2;
}

/* A required argument is missing. */
static int missing(const char *cmd, const char *what)
{
    fprintf(stderr, "topkp %s: %s (see `topkp help %s`)\n", cmd, what, cmd);
    return 2;
}

/* The value after the flag argv[*i] (moving *i past it); exits 2 when there is none. */
static const char *flag_value(const char *cmd, int argc, char **argv, int *i)
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
static int positional(const char *cmd, const char *arg, const char **slot)
{
    if (*slot || (arg[0] == '-' && arg[1]))
        return bad_arg(cmd, arg);
    *slot = arg;
    return 0;
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "topkp %s: %s\n", what, msg);
    return 1;
}

/* Parse a whole integer (or a float for p) argument; exits with a message naming it. */
static long long int_arg(const char *cmd, const char *flag, const char *v, long long lo,
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

static float float_arg(const char *cmd, const char *flag, const char *v)
{
    char *end;
    float x = strtof(v ? v : "", &end);
    if (!v || end == v || *end || isnan(x)) {
        fprintf(stderr, "topkp %s: %s needs a number, got '%s'\n", cmd, flag, v ? v : "");
        exit(2);
    }
    return x;
}

/* May `out` be written? Never when it is the input `in` (the same st_dev/st_ino, whatever the
 * path), and only with --force when it exists (README.md, "A five-minute tour"). */
static int output_allowed(const char *cmd, const char *in, const char *out, int force)
{
    struct stat so, si;
    if (stat(out, &so) != 0)
        return 1;
    if (in && stat(in, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
        fprintf(stderr, "topkp %s: %s is the input file %s; refusing to write over it (even "
                "with --force)\n", cmd, out, in);
        return 0;
    }
    if (!force) {
        fprintf(stderr, "topkp %s: %s exists; pass --force to overwrite it\n", cmd, out);
        return 0;
    }
    return 1;
}

/* Write through `out`.partial and rename it over `out`, so that a failed write leaves any
 * earlier `out` as it was and no half-written file behind. */
static void partial_path(const char *out, char *buf, size_t n)
{
    snprintf(buf, n, "%s.partial", out);
}

/* "OUT: not written (OUT.partial: what failed); OUT is left as it was". */
static void keep_partial_message(struct tkp_error *err, const char *out)
{
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    tkp_error_set(err, "%s: not written (%s); %s is left as it was", out, why, out);
}

/* After `partial` was written (rc: how that went): rename it over `out`, or remove it and say
 * that `out` was not written. A rename that fails (`out` became a folder, say) keeps the
 * complete output in `partial` and says so. Returns rc, or TKP_EINVAL when the rename failed. */
static int finish_output(const char *partial, const char *out, int rc, struct tkp_error *err)
{
    if (rc) {
        keep_partial_message(err, out);
        unlink(partial);
    } else if (rename(partial, out) != 0) {
        tkp_error_set(err, "%s: not written: cannot rename %s to it (%s); the complete output "
                      "is kept in %s", out, partial, strerror(errno), partial);
        rc = TKP_EINVAL;
    }
    return rc;
}

/* rows x cols elements of `elem` bytes each, or 0 when that overflows or passes `limit`
 * elements. */
static size_t checked_bytes(long long rows, long long cols, size_t elem, long long limit)
{
    if (rows < 0 || cols < 0 || (cols > 0 && rows > limit / cols))
        return 0;
    return (size_t)(rows * cols) * elem;
}

static enum tkp_backend default_backend(void)
{
#ifdef TKP_HAVE_CUDA
    extern int tkp_gpu_present(void);
    return tkp_gpu_present() ? TKP_GPU : TKP_CPU;
#else
    return TKP_CPU;
#endif
}

static enum tkp_backend backend_arg(const char *cmd, const char *v)
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

static void flag_names(unsigned bits, const char *const *names, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; names[i]; i++)
        if (bits & (1u << i))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", names[i]);
    if (!used)
        snprintf(buf, n, "-");
}

static void print_options(const struct tkp_algo *a)
{
    for (const struct tkp_option *opt = a->options; opt && opt->name; opt++) {
        char range[256];
        if (opt->type == TKP_OPT_ENUM) {
            size_t used = 0;
            for (int c = 0; opt->choices[c]; c++)
                used += (size_t)snprintf(range + used, sizeof range - used, "%s%s",
                                         c ? "|" : "", opt->choices[c]);
            printf("    --set %s=%s (default %s)  %s\n", opt->name, range,
                   opt->choices[(int)opt->def], opt->help);
        } else {
            printf("    --set %s=%s in [%g, %g] (default %g)  %s\n", opt->name,
                   opt->type == TKP_OPT_INT ? "INT" : "X", opt->min, opt->max, opt->def,
                   opt->help);
        }
    }
}

/* Name, summary, then ops, outputs, backends and flags on one line. */
static void print_algo(const struct tkp_algo *a)
{
    static const char *const ops[] = { "topk", "topp", "topk_topp", NULL };
    static const char *const outs[] = { "set", "sample", NULL };
    static const char *const backends[] = { "cpu", "gpu", NULL };
    char o[64], u[64], b[64];
    flag_names(a->ops, ops, o, sizeof o);
    flag_names(a->outputs, outs, u, sizeof u);
    flag_names(a->backends, backends, b, sizeof b);
    printf("  %-11s %s\n    ops=%s outputs=%s backends=%s%s%s", a->name, a->summary, o, u, b,
           a->flags & TKP_EXACT ? " exact" : "",
           a->flags & TKP_NOT_IMPLEMENTED ? " (not implemented)" : "");
    if (a->package)
        printf(" package=%s", a->package);
    putchar('\n');
}

/* What the peer worker said of each peer, by name. */
struct peer_probe {
    char name[64], info[400];
    int available;
};
struct probe_list {
    struct peer_probe peer[32];
    int n;
};

static void on_probe(const char *name, int available, const char *info, void *ctx)
{
    struct probe_list *l = ctx;
    if (l->n == 32)
        return;
    struct peer_probe *p = &l->peer[l->n++];
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->info, sizeof p->info, "%s", info);
    p->available = available;
}

/* The peers, each with what the worker says of its package here (unless probe is 0). */
static void list_peers(int probe)
{
    struct probe_list found = { .n = 0 };
    struct tkp_error err = { "" };
    int rc = 0;
    if (probe) {
        struct tkp_peer_session s;
        tkp_peer_session_init(&s, TKP_CPU, 0, 0, NULL);
        rc = tkp_peer_probe(&s, on_probe, &found, &err);
        tkp_peer_session_close(&s);
    }
    printf("peers: (through the Python bridge, docs/PEERS.md; interpreter %s, set TOPKP_PYTHON)\n",
           tkp_peer_python());
    for (int i = 0; tkp_peers[i]; i++) {
        const struct tkp_algo *a = tkp_peers[i];
        print_algo(a);
        const struct peer_probe *p = NULL;
        for (int j = 0; j < found.n; j++)
            if (strcmp(found.peer[j].name, a->name) == 0)
                p = &found.peer[j];
        if (probe && rc)
            printf("    importable here: unknown (%s)\n", err.msg);
        else if (probe && !p)
            printf("    importable here: unknown (peers/catalog.py does not list it)\n");
        else if (probe)
            printf("    importable here: %s (%s)\n", p->available ? "yes" : "no", p->info);
        print_options(a);
    }
}

/* The sweep axes of harness/axes.c: the keys of a sweep that make its cross product. */
static void list_axes(void)
{
    puts("sweep axes:");
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        const int text = a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM;
        char range[96] = "", def[96];
        if (!text && isfinite(a->min))
            snprintf(range, sizeof range, " in [%.0f, %.0f]", a->min, a->max);
        if (a->flags & TKP_AXIS_REQUIRED)
            snprintf(def, sizeof def, "required");
        else if (text)
            snprintf(def, sizeof def, "default %s",
                     a->type == TKP_AXIS_ENUM ? a->choices[(int)a->def] : a->def_text);
        else
            snprintf(def, sizeof def, "default %g", a->def);
        const int list = (a->flags & TKP_AXIS_LIST) != 0;
        const char *kind = text ? (list ? "names" : "a name")
                           : a->type == TKP_AXIS_F32 ? (list ? "numbers" : "a number")
                                                     : (list ? "integers" : "an integer");
        printf("  %-8s %s: %s%s%s; %s\n", a->name, a->help, kind, range,
               list ? ", one or a list" : "", def);
    }
}

/* The named limits of harness/limits.h and limits_files.h (README.md, "Configs"). */
static void list_limits(void)
{
#define LIMIT(name) printf("  %-27s %lld\n", #name, (long long)(name))
    puts("limits:");
    LIMIT(TKP_LUA_INSTRUCTION_BUDGET);
    LIMIT(TKP_LUA_MEMORY_MIB);
    LIMIT(TKP_LUA_SECONDS);
    LIMIT(TKP_CONFIG_MAX_BYTES);
    LIMIT(TKP_MAX_SWEEPS);
    LIMIT(TKP_MAX_CELLS);
    LIMIT(TKP_MAX_LIST_VALUES);
    LIMIT(TKP_MAX_NAME_CHARS);
    LIMIT(TKP_MAX_DATASET_CHARS);
    LIMIT(TKP_MAX_WARMUP);
    LIMIT(TKP_MAX_REPS);
    LIMIT(TKP_MAX_TIMING_SECONDS);
    LIMIT(TKP_MAX_LOGITS_ELEMS);
    LIMIT(TKP_MAX_LOGITS_ROWS);
    LIMIT(TKP_MAX_LOGITS_VOCAB);
    LIMIT(TKP_RESULT_KEY_BYTES);
    LIMIT(TKP_READ_SECONDS);
#undef LIMIT
}

static const char LIST_USAGE[] =
    "usage: topkp list [--no-probe]\n"
    "\n"
    "Prints the modules (their ops, outputs, backends and --set options), the peer libraries,\n"
    "the datasets, the sweep axes and the limits of harness/limits.h and harness/limits_files.h.\n"
    "\n"
    "  --no-probe   do not start Python to ask which peer packages import here\n";

static int cmd_list(int argc, char **argv)
{
    int probe = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--no-probe") == 0)
            probe = 0;
        else
            return bad_arg("list", argv[i]);
    }
    puts("algorithms:");
    for (int i = 0; tkp_algos[i]; i++) {
        print_algo(tkp_algos[i]);
        print_options(tkp_algos[i]);
    }
    list_peers(probe);
    puts("datasets:");
    for (const struct tkp_dataset *d = tkp_datasets; d->name; d++)
        printf("  %-11s %s\n", d->name, d->summary);
    puts("  file:X.h5   logits read from an HDF5 file (/logits [B, V])");
    list_axes();
    list_limits();
    return 0;
}

static const char RUN_USAGE[] =
    "usage: topkp run CONFIG.lua [-o FILE.h5] [options]\n"
    "\n"
    "Runs every cell of the config's sweeps and appends one row per cell to FILE.h5, flushed\n"
    "as it finishes. Prints a line per cell on stderr (its status, median time and the time\n"
    "left), then a summary: cells by status, the slowest cells, and the file written.\n"
    "\n"
    "  -o FILE.h5          the results file (default results/CONFIG.h5); an existing one is\n"
    "                      refused without --resume\n"
    "  --backend cpu|gpu   where the cells run (default gpu when one is present, else cpu)\n"
    "  --resume            continue FILE.h5: run only the cells it does not hold yet\n"
    "  --force             with --resume, append even with another config or binary\n"
    "  --dry-run           print the plan, one cell a line, on stdout and run nothing\n"
    "  --only ALGO,...     run only the cells of these modules or peers\n";

static int cmd_run(int argc, char **argv)
{
    struct tkp_run_args a = { .output = NULL, .backend = default_backend(), .argc = argc + 2,
                              .argv = argv - 2 }; /* the whole command line */
    for (int i = 0; i < argc; i++) {
        int rc = 0;
        if (strcmp(argv[i], "-o") == 0)
            a.output = flag_value("run", argc, argv, &i);
        else if (strcmp(argv[i], "--backend") == 0)
            a.backend = backend_arg("run", flag_value("run", argc, argv, &i));
        else if (strcmp(argv[i], "--resume") == 0)
            a.resume = 1;
        else if (strcmp(argv[i], "--force") == 0)
            a.force = 1;
        else if (strcmp(argv[i], "--dry-run") == 0)
            a.dry_run = 1;
        else if (strcmp(argv[i], "--only") == 0)
            a.only = flag_value("run", argc, argv, &i);
        else
            rc = positional("run", argv[i], &a.config);
        if (rc)
            return rc;
    }
    if (!a.config)
        return missing("run", "no CONFIG.lua given");
    char out[1024];
    if (!a.output) {
        const char *base = strrchr(a.config, '/');
        base = base ? base + 1 : a.config;
        snprintf(out, sizeof out, "results/%.*s.h5", (int)strcspn(base, "."), base);
        a.output = out;
    }
    struct tkp_error err = { "" };
    return tkp_run(&a, &err) ? fail("run", err.msg) : 0;
}

static const char APPLY_USAGE[] =
    "usage: topkp apply ALGO --in LOGITS.h5 --out OUT.h5 [options]\n"
    "\n"
    "Runs module ALGO (topkp list) on every row of LOGITS.h5 (/logits [B, V]) and writes\n"
    "OUT.h5: /kept uint8 [B, V] for a module that returns a kept set, /samples int64 [B, N]\n"
    "for one that samples. Says on stderr what it kept, how long it took and what it wrote.\n"
    "\n"
    "  --in FILE           the logits file (topkp gen, scripts/dump_logits.py)\n"
    "  --out FILE          the output, written as FILE.partial and renamed\n"
    "  --k K               top-k for every row (k <= 0 or k >= V: off)\n"
    "  --p P               top-p for every row (p >= 1: off; p <= 0 keeps one token)\n"
    "  --draws N           samples per row, for a module that samples (default 1)\n"
    "  --seed S            the sampler's seed (default 0)\n"
    "  --offset O          the sampler's Philox offset (default 0)\n"
    "  --set NAME=VALUE    a module option (topkp list shows them); may be repeated\n"
    "  --backend cpu|gpu   where it runs (default gpu when one is present, else cpu)\n"
    "  --force             overwrite an existing OUT (never the input)\n"
    "\n"
    "k and p: a --k or --p given here applies to every row and overrides the file's /k or /p\n"
    "(a note on stderr says on how many rows the file had another value). Without the flag a\n"
    "row takes the file's value; a file without /k (/p), or rows it leaves out, have top-k\n"
    "(top-p) off.\n";

/* What apply asked for beyond the module and the files. */
struct apply_args {
    const char *in, *out;
    enum tkp_backend backend;
    int32_t k, draws;
    float p;
    int k_given, p_given, force;
    uint64_t seed, offset;
};

/* Parse apply's arguments; the --set options go onto opts as they come (after ALGO is known,
 * so ALGO must come first). Returns 0, or the exit status of a usage error. */
static int apply_parse(int argc, char **argv, struct apply_args *x, const struct tkp_algo *a,
                       void *opts)
{
    struct tkp_error err = { "" };
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--in") == 0)
            x->in = flag_value("apply", argc, argv, &i);
        else if (strcmp(f, "--out") == 0)
            x->out = flag_value("apply", argc, argv, &i);
        else if (strcmp(f, "--force") == 0)
            x->force = 1;
        else if (strcmp(f, "--backend") == 0)
            x->backend = backend_arg("apply", flag_value("apply", argc, argv, &i));
        else if (strcmp(f, "--k") == 0)
            x->k = (int32_t)int_arg("apply", f, flag_value("apply", argc, argv, &i),
                                    -2147483647LL, 2147483647LL), x->k_given = 1;
        else if (strcmp(f, "--p") == 0)
            x->p = float_arg("apply", f, flag_value("apply", argc, argv, &i)), x->p_given = 1;
        else if (strcmp(f, "--draws") == 0)
            x->draws = (int32_t)int_arg("apply", f, flag_value("apply", argc, argv, &i), 1,
                                        1 << 24);
        else if (strcmp(f, "--seed") == 0)
            x->seed = (uint64_t)int_arg("apply", f, flag_value("apply", argc, argv, &i), 0,
                                        9223372036854775807LL);
        else if (strcmp(f, "--offset") == 0)
            x->offset = (uint64_t)int_arg("apply", f, flag_value("apply", argc, argv, &i), 0,
                                          9223372036854775807LL);
        else if (strcmp(f, "--set") == 0) {
            if (tkp_option_assign(a, opts, flag_value("apply", argc, argv, &i), &err)) {
                fprintf(stderr, "topkp apply: %s\n", err.msg);
                return 2;
            }
        } else
            return bad_arg("apply", f);
    }
    if (!x->in)
        return missing("apply", "--in LOGITS.h5 is required");
    if (!x->out)
        return missing("apply", "--out OUT.h5 is required");
    return 0;
}

/* A --k or --p on the command line overrides every row (APPLY_USAGE); the rows the file left
 * out already hold it (tkp_logits_read's default), so a changed row is one the file set. */
static void override_rows(struct tkp_batch *b, const struct apply_args *x)
{
    int64_t k_changed = 0, p_changed = 0;
    for (int64_t r = 0; r < b->batch; r++) {
        if (x->k_given && b->k[r] != x->k)
            b->k[r] = x->k, k_changed++;
        if (x->p_given && !(b->p[r] == x->p))
            b->p[r] = x->p, p_changed++;
    }
    if (k_changed)
        fprintf(stderr, "topkp apply: --k %d overrides the file's /k on %lld of %lld rows\n",
                (int)x->k, (long long)k_changed, (long long)b->batch);
    if (p_changed)
        fprintf(stderr, "topkp apply: --p %g overrides the file's /p on %lld of %lld rows\n",
                (double)x->p, (long long)p_changed, (long long)b->batch);
}

/* "topkp apply: qrita (cpu) on 8 rows x 32000 in 1.2 ms: kept 50 tokens a row; wrote y.h5" */
static void apply_report(const char *algo, const struct apply_args *x, const struct tkp_batch *b,
                         const uint8_t *kept, int32_t draws, double us)
{
    char t[32], what[160] = "";
    size_t used = 0;
    if (kept && b->batch > 0) {
        int64_t lo = INT64_MAX, hi = 0, sum = 0;
        for (int64_t r = 0; r < b->batch; r++) {
            int64_t n = 0;
            for (int64_t j = 0; j < b->vocab; j++)
                n += kept[r * b->vocab + j] != 0;
            lo = n < lo ? n : lo, hi = n > hi ? n : hi, sum += n;
        }
        if (lo == hi)
            used = (size_t)snprintf(what, sizeof what, "kept %lld tokens a row", (long long)lo);
        else
            used = (size_t)snprintf(what, sizeof what, "kept %lld to %lld tokens a row (mean %.1f)",
                                    (long long)lo, (long long)hi, (double)sum / (double)b->batch);
    }
    if (draws)
        snprintf(what + used, sizeof what - used, "%s%d draw%s a row", used ? ", " : "",
                 (int)draws, draws == 1 ? "" : "s");
    fprintf(stderr, "topkp apply: %s (%s) on %lld rows x %lld in %s: %s; wrote %s\n", algo,
            x->backend == TKP_GPU ? "gpu" : "cpu", (long long)b->batch, (long long)b->vocab,
            tkp_format_us(us, t, sizeof t), what, x->out);
}

/* Run the module on the batch and write the output file. */
static int apply_run(const struct tkp_algo *a, const void *opts, const struct apply_args *x,
                     struct tkp_batch *b, struct tkp_error *err)
{
    const int32_t draws = (a->outputs & TKP_OUT_SAMPLE) ? x->draws : 0;
    const size_t kept_bytes = checked_bytes(b->batch, b->vocab, 1, TKP_MAX_LOGITS_ELEMS);
    const size_t drawn_bytes = checked_bytes(b->batch, draws, sizeof(int64_t), TKP_MAX_LOGITS_ELEMS);
    uint8_t *kept = (a->outputs & TKP_OUT_SET) && kept_bytes ? malloc(kept_bytes + 1) : NULL;
    int64_t *samples = draws && drawn_bytes ? malloc(drawn_bytes + 1) : NULL;
    int rc = TKP_OK;
    if (((a->outputs & TKP_OUT_SET) && b->batch > 0 && !kept) || (draws && b->batch > 0 && !samples)) {
        tkp_error_set(err, "out of host memory for the outputs of %lld rows x %lld columns and "
                      "%d draws (limit %lld elements, TKP_MAX_LOGITS_ELEMS)", (long long)b->batch,
                      (long long)b->vocab, (int)draws, (long long)TKP_MAX_LOGITS_ELEMS);
        rc = TKP_ENOMEM;
    }
    const double t0 = tkp_now_us();
    if (rc == TKP_OK)
        rc = tkp_apply(a, opts, x->backend, b, kept, samples, draws, x->seed, x->offset, NULL, err);
    const double us = tkp_now_us() - t0;
    if (rc == TKP_OK) {
        char options[512], partial[1100];
        tkp_options_format(a, opts, options, sizeof options);
        partial_path(x->out, partial, sizeof partial);
        rc = tkp_apply_write(partial, b->batch, b->vocab, kept, samples, draws, a->name,
                             x->backend == TKP_GPU ? "gpu" : "cpu", options, err);
        rc = finish_output(partial, x->out, rc, err);
    }
    if (rc == TKP_OK)
        apply_report(a->name, x, b, kept, draws, us);
    free(kept);
    free(samples);
    return rc;
}

static int cmd_apply(int argc, char **argv)
{
    if (argc < 1)
        return missing("apply", "no ALGO given");
    if (argv[0][0] == '-') {
        fprintf(stderr, "topkp apply: ALGO comes first, got '%s' (see `topkp help apply`)\n",
                argv[0]);
        return 2;
    }
    const struct tkp_algo *a = tkp_algo_find(argv[0]);
    if (!a) {
        fprintf(stderr, "topkp apply: unknown algorithm '%s' (see `topkp list`)\n", argv[0]);
        return 2;
    }
    struct apply_args x = { .backend = default_backend(), .k = 0, .draws = 1, .p = 1.0f };
    void *opts = calloc(1, a->opts_size ? a->opts_size : 1);
    if (!opts)
        return fail("apply", "out of host memory for the options");
    tkp_options_defaults(a, opts);
    int rc = apply_parse(argc, argv, &x, a, opts);
    if (rc || !output_allowed("apply", x.in, x.out, x.force)) {
        free(opts);
        return rc ? rc : 1;
    }
    struct tkp_error err = { "" };
    struct tkp_batch b;
    rc = tkp_logits_read(x.in, x.k, x.p, &b, &err);
    if (rc == TKP_OK) {
        override_rows(&b, &x);
        rc = apply_run(a, opts, &x, &b, &err);
        tkp_batch_free(&b);
    }
    free(opts);
    return rc ? fail("apply", err.msg) : 0;
}

static const char GEN_USAGE[] =
    "usage: topkp gen DATASET --batch B --vocab V -o LOGITS.h5 [options]\n"
    "\n"
    "Writes B rows of V logits of a synthetic dataset (topkp list names them) in the\n"
    "logits-file layout of datasets/README.md: /logits float32 [B, V], and /k, /p only when\n"
    "asked.\n"
    "\n"
    "  --batch B    rows, 1 to 1048576\n"
    "  --vocab V    columns, 1 to 8388608 (B x V within harness/limits_files.h)\n"
    "  -o FILE      the output, written as FILE.partial and renamed\n"
    "  --seed S     the dataset's seed (default 1)\n"
    "  --k K        also write /k: K for every row (apply's --k overrides it)\n"
    "  --p P        also write /p: P for every row (apply's --p overrides it)\n"
    "  --force      overwrite an existing output\n";

/* What gen asked for. */
struct gen_args {
    const char *dataset, *out;
    long long batch, vocab;
    uint64_t seed;
    int32_t k;
    float p;
    int k_given, p_given, force;
};

static int gen_parse(int argc, char **argv, struct gen_args *g)
{
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i];
        int rc = 0;
        if (strcmp(f, "--force") == 0)
            g->force = 1;
        else if (strcmp(f, "--batch") == 0)
            g->batch = int_arg("gen", f, flag_value("gen", argc, argv, &i), 1, 1 << 20);
        else if (strcmp(f, "--vocab") == 0)
            g->vocab = int_arg("gen", f, flag_value("gen", argc, argv, &i), 1, 1 << 23);
        else if (strcmp(f, "--seed") == 0)
            g->seed = (uint64_t)int_arg("gen", f, flag_value("gen", argc, argv, &i), 0,
                                        9223372036854775807LL);
        else if (strcmp(f, "--k") == 0)
            g->k = (int32_t)int_arg("gen", f, flag_value("gen", argc, argv, &i), -2147483647LL,
                                    2147483647LL), g->k_given = 1;
        else if (strcmp(f, "--p") == 0)
            g->p = float_arg("gen", f, flag_value("gen", argc, argv, &i)), g->p_given = 1;
        else if (strcmp(f, "-o") == 0)
            g->out = flag_value("gen", argc, argv, &i);
        else
            rc = positional("gen", f, &g->dataset);
        if (rc)
            return rc;
    }
    if (!g->dataset)
        return missing("gen", "no DATASET given");
    if (g->batch < 0)
        return missing("gen", "--batch B is required");
    if (g->vocab < 0)
        return missing("gen", "--vocab V is required");
    if (!g->out)
        return missing("gen", "-o LOGITS.h5 is required");
    return 0;
}

/* b's buffers for g's shape: /k and /p only when asked. */
static int gen_alloc(const struct gen_args *g, struct tkp_batch *b, struct tkp_error *err)
{
    const size_t bytes = checked_bytes(g->batch, g->vocab, sizeof(float), TKP_MAX_LOGITS_ELEMS);
    if (!bytes) {
        tkp_error_set(err, "--batch %lld x --vocab %lld = %.4g elements is more than %lld "
                      "(TKP_MAX_LOGITS_ELEMS, harness/limits_files.h)", g->batch, g->vocab,
                      (double)g->batch * (double)g->vocab, (long long)TKP_MAX_LOGITS_ELEMS);
        return TKP_EINVAL;
    }
    *b = (struct tkp_batch){ g->batch, g->vocab, malloc(bytes),
                             g->k_given ? malloc(sizeof(int32_t) * (size_t)g->batch) : NULL,
                             g->p_given ? malloc(sizeof(float) * (size_t)g->batch) : NULL };
    if (!b->logits || (g->k_given && !b->k) || (g->p_given && !b->p)) {
        tkp_error_set(err, "out of host memory for --batch %lld x --vocab %lld logits (%.3g GB)",
                      g->batch, g->vocab, 1e-9 * (double)bytes);
        tkp_batch_free(b);
        return TKP_ENOMEM;
    }
    for (long long r = 0; r < g->batch; r++) {
        if (b->k)
            b->k[r] = g->k;
        if (b->p)
            b->p[r] = g->p;
    }
    return TKP_OK;
}

static int cmd_gen(int argc, char **argv)
{
    struct gen_args g = { .batch = -1, .vocab = -1, .seed = 1 };
    int rc = gen_parse(argc, argv, &g);
    if (rc)
        return rc;
    if (!output_allowed("gen", NULL, g.out, g.force))
        return 1;
    struct tkp_error err = { "" };
    struct tkp_batch b;
    if (gen_alloc(&g, &b, &err))
        return fail("gen", err.msg);
    rc = tkp_dataset_generate(g.dataset, g.seed, g.batch, g.vocab, b.logits, &err);
    char seed_text[32], partial[1100];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)g.seed);
    const char *attrs[] = { "dataset", g.dataset, "seed", seed_text, NULL };
    partial_path(g.out, partial, sizeof partial);
    if (rc == TKP_OK) {
        rc = tkp_logits_write(partial, &b, attrs, &err);
        rc = finish_output(partial, g.out, rc, &err);
    }
    tkp_batch_free(&b);
    return rc ? fail("gen", err.msg) : 0;
}

static const char EXPORT_USAGE[] =
    "usage: topkp export RESULTS.h5 [--format tsv|csv|json] [--sweep NAME]\n"
    "\n"
    "Prints the cells of every sweep of a results file (of `topkp run`) on stdout: a first\n"
    "column `sweep`, then every field, by name. A float that does not apply to a cell (the\n"
    "times of an untimed cell, a statistic its module does not report) is nan (null in JSON).\n"
    "\n"
    "  --format F     tsv (the default: one header line), csv (RFC 4180 quoting) or json (an\n"
    "                 array of objects)\n"
    "  --sweep NAME   only this sweep's cells\n";

static int cmd_export(int argc, char **argv)
{
    const char *file = NULL, *sweep = NULL;
    enum tkp_export_format format = TKP_EXPORT_TSV;
    for (int i = 0; i < argc; i++) {
        int rc = 0;
        if (strcmp(argv[i], "--sweep") == 0)
            sweep = flag_value("export", argc, argv, &i);
        else if (strcmp(argv[i], "--format") == 0) {
            const char *f = flag_value("export", argc, argv, &i);
            if (tkp_export_format_of(f, &format) != 0) {
                fprintf(stderr, "topkp export: --format needs tsv, csv or json, got '%s'\n", f);
                return 2;
            }
        } else
            rc = positional("export", argv[i], &file);
        if (rc)
            return rc;
    }
    if (!file)
        return missing("export", "no RESULTS.h5 given");
    struct tkp_error err = { "" };
    return tkp_results_export_as(file, sweep, format, stdout, &err) ? fail("export", err.msg)
                                                                    : 0;
}

static const char COMPARE_USAGE[] =
    "usage: topkp compare A.h5 B.h5 [--threshold REL] [--sweep NAME]\n"
    "\n"
    "For every cell the two results files share (the same sweep and cell key), B's median time\n"
    "against A's: the ratio B/A, its distribution-free 95 % interval (from each median's order\n"
    "statistics) and a verdict, then one summary line (N faster, N slower, N unchanged, N only\n"
    "in A, N only in B, N not timed in both). A cell is faster or slower only when its interval\n"
    "excludes 1 and its ratio is past the threshold.\n"
    "\n"
    "  --threshold REL   the relative difference that counts (default 0.02, in [0, 10])\n"
    "  --sweep NAME      only this sweep's cells\n";

static int cmd_compare(int argc, char **argv)
{
    const char *a = NULL, *b = NULL, *sweep = NULL;
    double threshold = 0.02;
    for (int i = 0; i < argc; i++) {
        int rc = 0;
        if (strcmp(argv[i], "--sweep") == 0)
            sweep = flag_value("compare", argc, argv, &i);
        else if (strcmp(argv[i], "--threshold") == 0) {
            threshold = float_arg("compare", argv[i], flag_value("compare", argc, argv, &i));
            if (!(threshold >= 0 && threshold <= 10)) {
                fprintf(stderr, "topkp compare: --threshold needs a relative difference in "
                        "[0, 10], such as 0.02, got %g\n", threshold);
                return 2;
            }
        } else
            rc = positional("compare", argv[i], a ? &b : &a);
        if (rc)
            return rc;
    }
    if (!b)
        return missing("compare", "two results files are needed (A.h5 B.h5)");
    struct tkp_error err = { "" };
    return tkp_compare_files(a, b, sweep, threshold, stdout, &err) ? fail("compare", err.msg)
                                                                    : 0;
}

static const char INFO_USAGE[] =
    "usage: topkp info RESULTS.h5\n"
    "\n"
    "Prints a results file's root attributes (provenance: version, commit, host, device,\n"
    "copy bandwidth) and every run recorded under /runs, as name<TAB>value lines.\n";

static int cmd_info(int argc, char **argv)
{
    const char *file = NULL;
    for (int i = 0; i < argc; i++) {
        int rc = positional("info", argv[i], &file);
        if (rc)
            return rc;
    }
    if (!file)
        return missing("info", "no RESULTS.h5 given");
    struct tkp_error err = { "" };
    return tkp_results_info(file, stdout, &err) ? fail("info", err.msg) : 0;
}

/* The subcommands: adding one is adding a row. */
struct command {
    const char *name, *summary, *usage;
    int (*fn)(int argc, char **argv);
};

static const struct command commands[] = {
    { "list", "the modules, peers, datasets and limits", LIST_USAGE, cmd_list },
    { "run", "run a Lua config's sweeps into a results file", RUN_USAGE, cmd_run },
    { "apply", "run one module on a logits file", APPLY_USAGE, cmd_apply },
    { "gen", "write a logits file from a synthetic dataset", GEN_USAGE, cmd_gen },
    { "export", "print a results file's cells as TSV, CSV or JSON", EXPORT_USAGE, cmd_export },
    { "compare", "compare two results files' median times, cell by cell", COMPARE_USAGE,
      cmd_compare },
    { "info", "print a results file's provenance and runs", INFO_USAGE, cmd_info },
    { NULL, NULL, NULL, NULL },
};

static const struct command *command_find(const char *name)
{
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* The overview: every subcommand with its summary. */
static void overview(FILE *out)
{
    fputs("usage: topkp COMMAND [ARGUMENTS]\n\ncommands:\n", out);
    for (const struct command *c = commands; c->name; c++)
        fprintf(out, "  %-8s %s\n", c->name, c->summary);
    fputs("\n`topkp help COMMAND` (or `topkp COMMAND --help`) lists a command's flags;\n"
          "`topkp --version` prints the version. README.md has a five-minute tour.\n", out);
}

static int is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* topkp help [COMMAND] */
static int help(int argc, char **argv)
{
    if (argc > 1)
        return bad_arg("help", argv[1]);
    if (argc == 0 || is_help(argv[0])) {
        overview(stdout);
        return 0;
    }
    const struct command *c = command_find(argv[0]);
    if (!c) {
        fprintf(stderr, "topkp help: unknown command '%s' (see `topkp --help`)\n", argv[0]);
        return 2;
    }
    fputs(c->usage, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    /* Every file is closed explicitly; HDF5's exit handler would only close again a results
     * file whose write failed, and HDF5 1.10 crashes doing that (tkp_results_close). */
    H5dont_atexit();
    /* A file-size limit (RLIMIT_FSIZE) fails the write with EFBIG, reported, not the process. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        overview(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (is_help(name) || strcmp(name, "help") == 0)
        return help(argc - 2, argv + 2);
    if (strcmp(name, "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "topkp: unexpected argument '%s' after --version\n", argv[2]);
            return 2;
        }
        printf("topkp %s (commit %s)\n", TKP_VERSION, TKP_GIT_COMMIT);
        return 0;
    }
    const struct command *c = command_find(name);
    if (!c) {
        fprintf(stderr, "topkp: unknown %s '%s' (see `topkp --help`)\n",
                name[0] == '-' ? "option" : "command", name);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (is_help(argv[i])) {
            fputs(c->usage, stdout);
            return 0;
        }
    return c->fn(argc - 2, argv + 2);
}
