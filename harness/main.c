/* main.c — the topkp command line:
 *   topkp list [--no-probe]
 *   topkp run CONFIG.lua [-o FILE.h5] [--backend cpu|gpu] [--resume [--force]] [--dry-run]
 *             [--only ALGO,...]
 *   topkp apply ALGO --in LOGITS.h5 --out OUT.h5 [--backend cpu|gpu] [--k K] [--p P]
 *               [--draws N] [--seed S] [--offset O] [--set name=value]... [--force]
 *   topkp gen DATASET --batch B --vocab V [--seed S] [--k K] [--p P] -o LOGITS.h5 [--force]
 *   topkp export RESULTS.h5 [--format tsv|csv|json] [--sweep NAME]
 *   topkp compare A.h5 B.h5 [--threshold REL] [--sweep NAME]
 *   topkp info RESULTS.h5
 * Errors go to stderr with a non-zero exit. */
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
#include "compare.h"
#include "h5util.h"
#include "limits.h"
#include "logits_file.h"
#include "peer_cell.h"
#include "results.h"
#include "runner.h"

static int usage(void)
{
    fputs("usage:\n"
          "  topkp list [--no-probe]   (--no-probe: do not ask Python which peers import)\n"
          "  topkp run CONFIG.lua [-o FILE.h5] [--backend cpu|gpu] [--resume [--force]] [--dry-run]\n"
          "              [--only ALGO,...]   (only the cells of these modules or peers)\n"
          "  topkp apply ALGO --in LOGITS.h5 --out OUT.h5 [--backend cpu|gpu] [--k K] [--p P]\n"
          "              [--draws N] [--seed S] [--offset O] [--set name=value]... [--force]\n"
          "  topkp gen DATASET --batch B --vocab V [--seed S] [--k K] [--p P] -o LOGITS.h5\n"
          "              [--force]   (--force: overwrite an existing output, never the input)\n"
          "  topkp export RESULTS.h5 [--format tsv|csv|json] [--sweep NAME]\n"
          "  topkp compare A.h5 B.h5 [--threshold REL] [--sweep NAME]   (B's medians against A's)\n"
          "  topkp info RESULTS.h5\n",
          stderr);
    return 2;
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
 * that `out` was not written. Returns rc, or TKP_EINVAL when the rename failed. */
static int finish_output(const char *cmd, const char *partial, const char *out, int rc,
                         struct tkp_error *err)
{
    if (rc) {
        keep_partial_message(err, out);
    } else if (rename(partial, out) != 0) {
        fprintf(stderr, "topkp %s: cannot rename %s to %s: %s\n", cmd, partial, out,
                strerror(errno));
        rc = TKP_EINVAL;
        tkp_error_set(err, "%s: not written", out);
    }
    if (rc)
        unlink(partial);
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

/* The named limits of harness/limits.h and limits_files.h (README.md, "Configs"). */
static void list_limits(void)
{
#define LIMIT(name) printf("  %-27s %lld\n", #name, (long long)(name))
    puts("limits:");
    LIMIT(TKP_LUA_INSTRUCTION_BUDGET);
    LIMIT(TKP_LUA_MEMORY_MIB);
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

static int cmd_list(int argc, char **argv)
{
    int probe = !(argc == 1 && strcmp(argv[0], "--no-probe") == 0);
    if (argc > 1 || (argc == 1 && probe))
        return usage();
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
    list_limits();
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    struct tkp_run_args a = { .output = NULL, .backend = default_backend(), .argc = argc + 2,
                              .argv = argv - 2 }; /* the whole command line */
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            a.output = argv[++i];
        else if (strcmp(argv[i], "--backend") == 0)
            a.backend = backend_arg("run", i + 1 < argc ? argv[++i] : NULL);
        else if (strcmp(argv[i], "--resume") == 0)
            a.resume = 1;
        else if (strcmp(argv[i], "--force") == 0)
            a.force = 1;
        else if (strcmp(argv[i], "--dry-run") == 0)
            a.dry_run = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            a.only = argv[++i];
        else if (argv[i][0] != '-' && !a.config)
            a.config = argv[i];
        else
            return usage();
    }
    if (!a.config)
        return usage();
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

static int cmd_apply(int argc, char **argv)
{
    if (argc < 1)
        return usage();
    const struct tkp_algo *a = tkp_algo_find(argv[0]);
    if (!a) {
        fprintf(stderr, "topkp apply: unknown algorithm '%s' (see `topkp list`)\n", argv[0]);
        return 2;
    }
    const char *in = NULL, *out = NULL;
    enum tkp_backend backend = default_backend();
    int32_t k = 0, draws = 1;
    float p = 1.0f;
    uint64_t seed = 0, offset = 0;
    int force = 0;
    void *opts = calloc(1, a->opts_size ? a->opts_size : 1);
    if (!opts)
        return fail("apply", "out of host memory for the options");
    tkp_options_defaults(a, opts);
    struct tkp_error err = { "" };
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--in") == 0 && v)
            in = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && v)
            out = argv[++i];
        else if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (strcmp(argv[i], "--backend") == 0)
            backend = backend_arg("apply", argv[++i]);
        else if (strcmp(argv[i], "--k") == 0)
            k = (int32_t)int_arg("apply", "--k", argv[++i], -2147483647LL, 2147483647LL);
        else if (strcmp(argv[i], "--p") == 0)
            p = float_arg("apply", "--p", argv[++i]);
        else if (strcmp(argv[i], "--draws") == 0)
            draws = (int32_t)int_arg("apply", "--draws", argv[++i], 1, 1 << 24);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = (uint64_t)int_arg("apply", "--seed", argv[++i], 0, 9223372036854775807LL);
        else if (strcmp(argv[i], "--offset") == 0)
            offset = (uint64_t)int_arg("apply", "--offset", argv[++i], 0, 9223372036854775807LL);
        else if (strcmp(argv[i], "--set") == 0 && v) {
            if (tkp_option_assign(a, opts, argv[++i], &err))
                return fail("apply", err.msg);
        } else
            return usage();
    }
    if (!in || !out)
        return usage();
    if (!output_allowed("apply", in, out, force))
        return 1;
    struct tkp_batch b;
    if (tkp_logits_read(in, k, p, &b, &err))
        return fail("apply", err.msg);
    if (!(a->outputs & TKP_OUT_SAMPLE))
        draws = 0;
    const size_t kept_bytes = checked_bytes(b.batch, b.vocab, 1, TKP_MAX_LOGITS_ELEMS);
    const size_t drawn_bytes = checked_bytes(b.batch, draws, sizeof(int64_t), TKP_MAX_LOGITS_ELEMS);
    uint8_t *kept = (a->outputs & TKP_OUT_SET) && kept_bytes ? malloc(kept_bytes + 1) : NULL;
    int64_t *samples = draws && drawn_bytes ? malloc(drawn_bytes + 1) : NULL;
    int rc = TKP_OK;
    if (((a->outputs & TKP_OUT_SET) && b.batch > 0 && !kept) || (draws && b.batch > 0 && !samples)) {
        tkp_error_set(&err, "out of host memory for the outputs of %lld rows x %lld columns and "
                      "%d draws (limit %lld elements, TKP_MAX_LOGITS_ELEMS)", (long long)b.batch,
                      (long long)b.vocab, (int)draws, (long long)TKP_MAX_LOGITS_ELEMS);
        rc = TKP_ENOMEM;
    }
    if (rc == TKP_OK)
        rc = tkp_apply(a, opts, backend, &b, kept, samples, draws, seed, offset, NULL, &err);
    if (rc == TKP_OK) {
        char options[512], partial[1100];
        tkp_options_format(a, opts, options, sizeof options);
        partial_path(out, partial, sizeof partial);
        rc = tkp_apply_write(partial, b.batch, b.vocab, kept, samples, draws, a->name,
                             backend == TKP_GPU ? "gpu" : "cpu", options, &err);
        rc = finish_output("apply", partial, out, rc, &err);
    }
    free(kept);
    free(samples);
    free(opts);
    tkp_batch_free(&b);
    return rc ? fail("apply", err.msg) : 0;
}

static int cmd_gen(int argc, char **argv)
{
    if (argc < 1)
        return usage();
    const char *name = argv[0], *out = NULL;
    long long batch = -1, vocab = -1;
    uint64_t seed = 1;
    int32_t k = 0;
    float p = 1.0f;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (strcmp(argv[i], "--batch") == 0)
            batch = int_arg("gen", "--batch", argv[++i], 1, 1 << 20);
        else if (strcmp(argv[i], "--vocab") == 0)
            vocab = int_arg("gen", "--vocab", argv[++i], 1, 1 << 23);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = (uint64_t)int_arg("gen", "--seed", argv[++i], 0, 9223372036854775807LL);
        else if (strcmp(argv[i], "--k") == 0)
            k = (int32_t)int_arg("gen", "--k", argv[++i], -2147483647LL, 2147483647LL);
        else if (strcmp(argv[i], "--p") == 0)
            p = float_arg("gen", "--p", argv[++i]);
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else
            return usage();
    }
    if (batch < 0 || vocab < 0 || !out)
        return usage();
    if (!output_allowed("gen", NULL, out, force))
        return 1;
    struct tkp_error err = { "" };
    const size_t bytes = checked_bytes(batch, vocab, sizeof(float), TKP_MAX_LOGITS_ELEMS);
    if (!bytes) {
        tkp_error_set(&err, "--batch %lld x --vocab %lld = %.4g elements is more than %lld "
                      "(TKP_MAX_LOGITS_ELEMS, harness/limits_files.h)", batch, vocab,
                      (double)batch * (double)vocab, (long long)TKP_MAX_LOGITS_ELEMS);
        return fail("gen", err.msg);
    }
    struct tkp_batch b = { batch, vocab, malloc(bytes), malloc(sizeof(int32_t) * (size_t)batch),
                           malloc(sizeof(float) * (size_t)batch) };
    if (!b.logits || !b.k || !b.p) {
        tkp_error_set(&err, "out of host memory for --batch %lld x --vocab %lld logits (%.3g GB)",
                      batch, vocab, 1e-9 * (double)bytes);
        tkp_batch_free(&b);
        return fail("gen", err.msg);
    }
    int rc = tkp_dataset_generate(name, seed, batch, vocab, b.logits, &err);
    for (long long r = 0; r < batch; r++) {
        b.k[r] = k;
        b.p[r] = p;
    }
    char seed_text[32], partial[1100];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    const char *attrs[] = { "dataset", name, "seed", seed_text, NULL };
    partial_path(out, partial, sizeof partial);
    if (rc == TKP_OK) {
        rc = tkp_logits_write(partial, &b, attrs, &err);
        rc = finish_output("gen", partial, out, rc, &err);
    }
    tkp_batch_free(&b);
    return rc ? fail("gen", err.msg) : 0;
}

static int cmd_export(int argc, char **argv)
{
    if (argc < 1)
        return usage();
    const char *sweep = NULL;
    enum tkp_export_format format = TKP_EXPORT_TSV;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sweep") == 0 && i + 1 < argc)
            sweep = argv[++i];
        else if (strcmp(argv[i], "--format") != 0 || i + 1 == argc ||
                 tkp_export_format_of(argv[++i], &format) != 0)
            return usage();
    }
    struct tkp_error err = { "" };
    return tkp_results_export_as(argv[0], sweep, format, stdout, &err) ? fail("export", err.msg)
                                                                       : 0;
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 1)
        return usage();
    struct tkp_error err = { "" };
    return tkp_results_info(argv[0], stdout, &err) ? fail("info", err.msg) : 0;
}

int main(int argc, char **argv)
{
    /* Every file is closed explicitly; HDF5's exit handler would only close again a results
     * file whose write failed, and HDF5 1.10 crashes doing that (tkp_results_close). */
    H5dont_atexit();
    /* A file-size limit (RLIMIT_FSIZE) fails the write with EFBIG, reported, not the process. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "apply") == 0)
        return cmd_apply(argc - 2, argv + 2);
    if (strcmp(cmd, "gen") == 0)
        return cmd_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0)
        return cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "compare") == 0)
        return tkp_compare_main(argc - 2, argv + 2, stdout);
    return usage();
}
