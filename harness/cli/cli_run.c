/* cli_run.c — the commands that compute and write (docs/DESIGN.md, "The command line"): `run`
 * (a config's sweeps into a results file: runner.c), `apply` (one module on a logits file, a
 * contract: docs/USAGE.md, "A five-minute tour") and `gen` (a logits file from a dataset). `apply`
 * and `gen` write their output as out_file.h says: never over their input, over an existing
 * output only with --force, through a temporary renamed over it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../algos/common/gate.h"
#include "../datasets/datasets.h"
#include "apply.h"
#include "cli.h"
#include "gpu.h"
#include "limits_config.h"
#include "logits_file.h"
#include "multi_gpu.h"
#include "out_file.h"
#include "runner.h"
#include "timing.h"

/* rows x cols elements of `elem` bytes each, or 0 when that overflows or passes `limit`
 * elements. */
static size_t checked_bytes(long long rows, long long cols, size_t elem, long long limit)
{
    if (rows < 0 || cols < 0 || (cols > 0 && rows > limit / cols))
        return 0;
    return (size_t)(rows * cols) * elem;
}

/* --dtype f32|bf16|f16 (docs/SEMANTICS.md, "16-bit logits"); a usage error otherwise. */
static enum tkp_dtype dtype_arg(const char *cmd, const char *v)
{
    for (int t = 0; v && t < TKP_DTYPE_COUNT; t++)
        if (strcmp(v, tkp_dtype_name((enum tkp_dtype)t)) == 0)
            return (enum tkp_dtype)t;
    char shown[96];
    fprintf(stderr, "topkp %s: --dtype is f32, bf16 or f16, got '%s'\n", cmd,
            tkp_gate_escape(v, strlen(v), shown, sizeof shown));
    exit(2);
}

const char RUN_USAGE[] =
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
    "  --only ALGO,...     run only the cells of these modules or peers\n"
    "  --sweep NAME,...    run only the cells of these sweeps of the config\n"
    "  --shard I/N         run shard I of N (0 <= I < N): a deterministic 1/N of the plan,\n"
    "                      balanced by cost; `topkp merge` joins the N files\n"
    "  --device D          the GPU to run on (cudaSetDevice; --backend gpu only)\n"
    "  --gpus all|G,...    one process per GPU, each a shard into FILE.shard-I.h5 (its log\n"
    "                      FILE.shard-I.log), merged into FILE.h5 at the end\n"
    "  --workers N         the same with N processes on the CPU backend\n"
    "\n"
    "docs/CLUSTERS.md, \"Sweeps across GPUs and hosts\", has the shard files and the merge.\n";

/* --shard I/N, or a usage error naming the value. */
static struct tkp_shard shard_arg(const char *v)
{
    struct tkp_shard s;
    struct tkp_error err = { "" };
    if (tkp_shard_parse(v, &s, &err) == TKP_OK)
        return s;
    fprintf(stderr, "topkp run: %s\n", err.msg);
    exit(2);
}

/* --gpus all|G,...: its form checked here (tkp_gpus_parse), a usage error (exit 2) naming the
 * value; whether the devices exist is the multi-process runner's to check (multi_gpu.c). */
static const char *gpus_arg(const char *v)
{
    int devices[TKP_MAX_CHILDREN];
    struct tkp_error err = { "" };
    if (v && tkp_gpus_parse(v, devices, &err) >= 0)
        return v;
    fprintf(stderr, "topkp run: %s\n", err.msg);
    exit(2);
}

/* --device D: made current before anything else touches CUDA, on the GPU backend only (the CPU
 * backend has no devices to pick: docs/CLUSTERS.md, "Sweeps across GPUs and hosts"). */
static int select_device(const struct tkp_run_args *a, int backend_given)
{
    if (a->device < 0)
        return 0;
    struct tkp_error err = { "" };
    if (backend_given && a->backend != TKP_GPU) {
        fprintf(stderr, "topkp run: --device %d picks a GPU; the CPU backend has none (use "
                "--backend gpu, or --workers N for several CPU processes)\n", a->device);
        return 2;
    }
    if (tkp_gpu_select(a->device, &err) != TKP_OK) {
        fprintf(stderr, "topkp run: --device %d: %s\n", a->device, err.msg);
        return 2;
    }
    return 0;
}

/* The checks between the flags of run that go together. */
static int run_flags_conflict(const struct tkp_run_args *a, const struct tkp_multi_args *m)
{
    const char *why = NULL;
    if (m->gpus && m->workers)
        why = "--gpus and --workers are two ways to say how many processes; give one";
    else if ((m->gpus || m->workers) && a->shard.count)
        why = "--shard is what --gpus and --workers pass to each of their processes; give one";
    else if ((m->gpus || m->workers) && a->device >= 0)
        why = "--device is what --gpus passes to each of its processes; give one";
    else if ((m->gpus || m->workers) && a->dry_run)
        why = "--dry-run with --gpus or --workers: see one shard's cells with --dry-run "
              "--shard I/N";
    if (why)
        fprintf(stderr, "topkp run: %s\n", why);
    return why ? 2 : 0;
}

int cmd_run(int argc, char **argv)
{
    struct tkp_run_args a = { .output = NULL, .device = -1, .argc = argc + 2,
                              .argv = argv - 2 }; /* the whole command line */
    struct tkp_multi_args m = { NULL, 0 };
    int backend_given = 0;
    const char *backend = NULL; /* --backend's value: a dry run may plan for a GPU it lacks */
    for (int i = 0; i < argc; i++) {
        int rc = 0;
        if (strcmp(argv[i], "-o") == 0)
            a.output = path_arg("run", "-o", flag_value("run", argc, argv, &i));
        else if (strcmp(argv[i], "--backend") == 0)
            backend = flag_value("run", argc, argv, &i), backend_given = 1;
        else if (strcmp(argv[i], "--shard") == 0)
            a.shard = shard_arg(flag_value("run", argc, argv, &i));
        else if (strcmp(argv[i], "--device") == 0)
            a.device = (int)int_arg("run", "--device", flag_value("run", argc, argv, &i), 0, 1023);
        else if (strcmp(argv[i], "--gpus") == 0)
            m.gpus = gpus_arg(flag_value("run", argc, argv, &i));
        else if (strcmp(argv[i], "--workers") == 0)
            m.workers = (int)int_arg("run", "--workers", flag_value("run", argc, argv, &i), 1, 256);
        else if (strcmp(argv[i], "--resume") == 0)
            a.resume = 1;
        else if (strcmp(argv[i], "--force") == 0)
            a.force = 1;
        else if (strcmp(argv[i], "--dry-run") == 0)
            a.dry_run = 1;
        else if (strcmp(argv[i], "--only") == 0)
            a.only = name_list_arg("run", "--only", flag_value("run", argc, argv, &i));
        else if (strcmp(argv[i], "--sweep") == 0)
            a.sweeps = name_list_arg("run", "--sweep", flag_value("run", argc, argv, &i));
        else
            rc = positional("run", argv[i], &a.config);
        if (rc)
            return rc;
    }
    if (!a.config)
        return missing("run", "no CONFIG.lua given");
    if (backend_given)
        a.backend = backend_arg("run", backend, a.dry_run);
    int rc = run_flags_conflict(&a, &m);
    if (!rc)
        rc = select_device(&a, backend_given);
    if (rc)
        return rc;
    if (!backend_given)
        a.backend = m.workers ? TKP_CPU : m.gpus || a.device >= 0 ? TKP_GPU : default_backend();
    char out[1024];
    if (!a.output) {
        const char *base = strrchr(a.config, '/');
        base = base ? base + 1 : a.config;
        snprintf(out, sizeof out, "results/%.*s.h5", (int)strcspn(base, "."), base);
        a.output = out;
    }
    struct tkp_error err = { "" };
    if (m.gpus || m.workers)
        return tkp_run_multi(&a, &m, &err) ? fail("run", err.msg) : 0;
    return tkp_run(&a, &err) ? fail("run", err.msg) : 0;
}

const char APPLY_USAGE[] =
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
    "  --min-p X           min-p for every row (X <= 0: off; docs/SEMANTICS.md, \"min-p\")\n"
    "  --seed S            the sampler's seed (default 0)\n"
    "  --offset O          the sampler's Philox offset (default 0)\n"
    "  --set NAME=VALUE    a module option (topkp list shows them); may be repeated\n"
    "  --backend cpu|gpu   where it runs (default gpu when one is present, else cpu)\n"
    "  --dtype f32|bf16|f16  the logits type the module reads (default: the file's own; a\n"
    "                      file of another type has its values rounded to it, to nearest\n"
    "                      even, first); a module that does not read it is refused\n"
    "  --force             overwrite an existing OUT (never the input)\n"
    "\n"
    "k and p: a --k or --p given here applies to every row and overrides the file's /k or /p\n"
    "(a note on stderr says on how many rows the file had another value). Without the flag a\n"
    "row takes the file's value; a file without /k (/p), or rows it leaves out, have top-k\n"
    "(top-p) off. --min-p overrides the file's /min_p the same way.\n"
    "\n"
    "Seeds: a file with /seed or /offset (one per row) keys each row's draws by its own seed\n"
    "and offset, whatever its place in the batch; they win over --seed and --offset, which\n"
    "then only stand in for the array the file lacks (docs/SEMANTICS.md, \"Sampling: two\n"
    "keying modes\").\n"
    "\n"
    "A bf16 or f16 /logits is read as it is stored; the module's output on it is, bit for bit,\n"
    "its output on the exact float32 values (docs/SEMANTICS.md, \"16-bit logits\").\n";

/* What apply asked for beyond the module and the files. */
struct apply_args {
    const char *in, *out;
    enum tkp_backend backend;
    int32_t k, draws;
    float p, min_p;
    int k_given, p_given, min_p_given, seed_given, offset_given, dtype_given, force;
    enum tkp_dtype dtype;
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
            x->out = path_arg("apply", "--out", flag_value("apply", argc, argv, &i));
        else if (strcmp(f, "--force") == 0)
            x->force = 1;
        else if (strcmp(f, "--backend") == 0)
            x->backend = backend_arg("apply", flag_value("apply", argc, argv, &i), 0);
        else if (strcmp(f, "--dtype") == 0)
            x->dtype = dtype_arg("apply", flag_value("apply", argc, argv, &i)), x->dtype_given = 1;
        else if (strcmp(f, "--k") == 0)
            x->k = (int32_t)int_arg("apply", f, flag_value("apply", argc, argv, &i),
                                    -2147483647LL, 2147483647LL), x->k_given = 1;
        else if (strcmp(f, "--p") == 0)
            x->p = float_arg("apply", f, flag_value("apply", argc, argv, &i), &tkp_dom_p),
                   x->p_given = 1;
        else if (strcmp(f, "--min-p") == 0)
            x->min_p = float_arg("apply", f, flag_value("apply", argc, argv, &i), &tkp_dom_min_p),
            x->min_p_given = 1;
        else if (strcmp(f, "--draws") == 0)
            x->draws = (int32_t)int_arg("apply", f, flag_value("apply", argc, argv, &i), 1,
                                        1 << 24);
        else if (strcmp(f, "--seed") == 0)
            x->seed = (uint64_t)u64_arg("apply", f, flag_value("apply", argc, argv, &i)),
                      x->seed_given = 1;
        else if (strcmp(f, "--offset") == 0)
            x->offset = (uint64_t)u64_arg("apply", f, flag_value("apply", argc, argv, &i)),
                        x->offset_given = 1;
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

/* --min-p sets every row's min_p, over the file's /min_p; a --seed or --offset that the
 * file's own array replaces is said to be unused (APPLY_USAGE). 0, or TKP_ENOMEM. */
static int override_sampling(struct tkp_batch *b, const struct apply_args *x)
{
    if (x->min_p_given) {
        if (b->min_p)
            fprintf(stderr, "topkp apply: --min-p %g overrides the file's /min_p\n",
                    (double)x->min_p);
        else if (!(b->min_p = malloc(sizeof(float) * (size_t)(b->batch ? b->batch : 1))))
            return TKP_ENOMEM;
        for (int64_t r = 0; r < b->batch; r++)
            b->min_p[r] = x->min_p;
    }
    if (x->seed_given && b->seed)
        fprintf(stderr, "topkp apply: the file's /seed keys every row; --seed is not used\n");
    if (x->offset_given && b->offset)
        fprintf(stderr, "topkp apply: the file's /offset keys every row; --offset is not used\n");
    return TKP_OK;
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
                     struct tkp_batch *b, struct tkp_out *o, struct tkp_error *err)
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
        char options[512];
        tkp_options_format(a, opts, options, sizeof options);
        rc = tkp_apply_write(o->tmp, b->batch, b->vocab, kept, samples, draws, a->name,
                             x->backend == TKP_GPU ? "gpu" : "cpu", options, err);
        rc = tkp_out_finish(o, rc, err);
    }
    if (rc == TKP_OK)
        apply_report(a->name, x, b, kept, draws, us);
    free(kept);
    free(samples);
    return rc;
}

int cmd_apply(int argc, char **argv)
{
    if (argc < 1)
        return missing("apply", "no ALGO given");
    if (argv[0][0] == '-') {
        fprintf(stderr, "topkp apply: ALGO comes first, got '%s' (see `topkp help apply`)\n",
                tkp_gate_shown(argv[0]));
        return 2;
    }
    const struct tkp_algo *a = tkp_algo_find(argv[0]);
    if (!a) {
        fprintf(stderr, "topkp apply: unknown algorithm '%s' (see `topkp list`)\n",
                tkp_gate_shown(argv[0]));
        return 2;
    }
    struct apply_args x = { .backend = default_backend(), .k = 0, .draws = 1, .p = 1.0f };
    void *opts = calloc(1, a->opts_size ? a->opts_size : 1);
    if (!opts)
        return fail("apply", "out of host memory for the options");
    tkp_options_defaults(a, opts);
    int rc = apply_parse(argc, argv, &x, a, opts);
    struct tkp_error err = { "" };
    struct tkp_out o;
    if (rc || tkp_out_begin(&o, x.out, &x.in, 1, x.force, &err)) {
        free(opts);
        return rc ? rc : fail("apply", err.msg);
    }
    struct tkp_batch b;
    rc = tkp_logits_read(x.in, x.k, x.p, &b, &err);
    if (rc == TKP_OK && x.dtype_given && x.dtype != b.dtype) {
        fprintf(stderr, "topkp apply: --dtype %s: the %s values of %s rounded to %s\n",
                tkp_dtype_name(x.dtype), tkp_dtype_name(b.dtype), x.in, tkp_dtype_name(x.dtype));
        rc = tkp_batch_to_dtype(&b, x.dtype, &err);
        if (rc)
            tkp_batch_free(&b);
    }
    if (rc == TKP_OK) {
        override_rows(&b, &x);
        rc = override_sampling(&b, &x);
        if (rc)
            tkp_error_set(&err, "out of host memory for --min-p");
        else
            rc = apply_run(a, opts, &x, &b, &o, &err);
        tkp_batch_free(&b);
    }
    tkp_out_abandon(&o);
    free(opts);
    return rc ? fail("apply", err.msg) : 0;
}

const char GEN_USAGE[] =
    "usage: topkp gen DATASET --batch B --vocab V -o LOGITS.h5 [options]\n"
    "\n"
    "Writes B rows of V logits of a synthetic dataset (topkp list names them) in the\n"
    "logits-file layout of datasets/README.md: /logits [B, V] (float32, or with --dtype the\n"
    "dataset's values rounded to bf16 or f16), and /k, /p only when asked.\n"
    "\n"
    "  --batch B    rows, 1 to 1048576\n"
    "  --vocab V    columns, 1 to 8388608 (B x V within harness/common/limits_files.h)\n"
    "  -o FILE      the output, written as FILE.partial and renamed\n"
    "  --seed S     the dataset's seed (default 1)\n"
    "  --k K        also write /k: K for every row (apply's --k overrides it)\n"
    "  --p P        also write /p: P for every row (apply's --p overrides it)\n"
    "  --min-p X    also write /min_p: X for every row (apply's --min-p overrides it)\n"
    "  --row-seeds S  also write /seed: S + r for row r (mod 2^64), so that each row's\n"
    "               draws are keyed by its own seed (docs/SEMANTICS.md, \"Sampling: two\n"
    "               keying modes\")\n"
    "  --row-offset O  also write /offset: O for every row (per-row keying too)\n"
    "  --dtype T    f32 (default), bf16 or f16: the type of /logits (values rounded to\n"
    "               nearest even; an HDF5 float of the type's fields, attribute dtype)\n"
    "  --force      overwrite an existing output\n";

/* What gen asked for. */
struct gen_args {
    const char *dataset, *out;
    long long batch, vocab;
    uint64_t seed;
    int32_t k;
    float p, min_p;
    int k_given, p_given, min_p_given, seeds_given, offset_given, force;
    uint64_t row_seed, row_offset;
    enum tkp_dtype dtype;
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
            g->seed = (uint64_t)u64_arg("gen", f, flag_value("gen", argc, argv, &i));
        else if (strcmp(f, "--k") == 0)
            g->k = (int32_t)int_arg("gen", f, flag_value("gen", argc, argv, &i), -2147483647LL,
                                    2147483647LL), g->k_given = 1;
        else if (strcmp(f, "--p") == 0)
            g->p = float_arg("gen", f, flag_value("gen", argc, argv, &i), &tkp_dom_p),
                   g->p_given = 1;
        else if (strcmp(f, "--min-p") == 0)
            g->min_p = float_arg("gen", f, flag_value("gen", argc, argv, &i), &tkp_dom_min_p),
                       g->min_p_given = 1;
        else if (strcmp(f, "--row-seeds") == 0)
            g->row_seed = (uint64_t)u64_arg("gen", f, flag_value("gen", argc, argv, &i)),
                          g->seeds_given = 1;
        else if (strcmp(f, "--row-offset") == 0)
            g->row_offset = (uint64_t)u64_arg("gen", f, flag_value("gen", argc, argv, &i)),
                            g->offset_given = 1;
        else if (strcmp(f, "-o") == 0)
            g->out = path_arg("gen", "-o", flag_value("gen", argc, argv, &i));
        else if (strcmp(f, "--dtype") == 0)
            g->dtype = dtype_arg("gen", flag_value("gen", argc, argv, &i));
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

/* b's buffers for g's shape: /k, /p, /seed, /offset and /min_p only when asked. */
static int gen_alloc(const struct gen_args *g, struct tkp_batch *b, struct tkp_error *err)
{
    const size_t bytes = checked_bytes(g->batch, g->vocab, sizeof(float), TKP_MAX_LOGITS_ELEMS);
    if (!bytes) {
        tkp_error_set(err, "--batch %lld x --vocab %lld = %.4g elements is more than %lld "
                      "(TKP_MAX_LOGITS_ELEMS, harness/common/limits_files.h)", g->batch, g->vocab,
                      (double)g->batch * (double)g->vocab, (long long)TKP_MAX_LOGITS_ELEMS);
        return TKP_EINVAL;
    }
    const size_t rows = (size_t)g->batch;
    *b = (struct tkp_batch){ g->batch, g->vocab, malloc(bytes),
                             g->k_given ? malloc(sizeof(int32_t) * rows) : NULL,
                             g->p_given ? malloc(sizeof(float) * rows) : NULL, TKP_F32, NULL,
                             g->seeds_given ? malloc(sizeof(uint64_t) * rows) : NULL,
                             g->offset_given ? malloc(sizeof(uint64_t) * rows) : NULL,
                             g->min_p_given ? malloc(sizeof(float) * rows) : NULL };
    if (!b->logits || (g->k_given && !b->k) || (g->p_given && !b->p) ||
        (g->seeds_given && !b->seed) || (g->offset_given && !b->offset) ||
        (g->min_p_given && !b->min_p)) {
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
        if (b->seed)
            b->seed[r] = g->row_seed + (uint64_t)r;
        if (b->offset)
            b->offset[r] = g->row_offset;
        if (b->min_p)
            b->min_p[r] = g->min_p;
    }
    return TKP_OK;
}

int cmd_gen(int argc, char **argv)
{
    struct gen_args g = { .batch = -1, .vocab = -1, .seed = 1 };
    int rc = gen_parse(argc, argv, &g);
    if (rc)
        return rc;
    struct tkp_error err = { "" };
    struct tkp_out o;
    if (tkp_out_begin(&o, g.out, NULL, 0, g.force, &err))
        return fail("gen", err.msg);
    struct tkp_batch b;
    if (gen_alloc(&g, &b, &err)) {
        tkp_out_abandon(&o);
        return fail("gen", err.msg);
    }
    rc = tkp_dataset_generate(g.dataset, g.seed, g.batch, g.vocab, b.logits, &err);
    if (rc == TKP_OK)
        rc = tkp_batch_to_dtype(&b, g.dtype, &err);
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)g.seed);
    const char *attrs[] = { "dataset", g.dataset, "seed", seed_text, NULL };
    if (rc == TKP_OK) {
        rc = tkp_logits_write(o.tmp, &b, attrs, &err);
        rc = tkp_out_finish(&o, rc, &err);
    }
    tkp_out_abandon(&o);
    tkp_batch_free(&b);
    return rc ? fail("gen", err.msg) : 0;
}
