/* tkp.h — the contract between the harness and an algorithm module.
 *
 * A module is one `struct tkp_algo`: what it computes (capabilities, options, the refusals
 * that hold on every backend) and one `struct tkp_impl` per backend it offers (workspace,
 * init, run, statistics). The harness owns memory, streams, timing and verification: a
 * module says what it supports, how much workspace it needs, and then runs without
 * allocating or synchronising. The exact output every module must produce is
 * docs/SEMANTICS.md; the contract in prose is docs/DESIGN.md, "The module table". */
#ifndef TKP_H
#define TKP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/half.h" /* enum tkp_dtype: the element type of the logits */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this contract a module was written against (struct tkp_algo.abi); fields
 * and methods are only ever appended, each version naming what it added. The harness loads a
 * module of any version from TKP_ABI_OLDEST to TKP_ABI, reading only what the module's version
 * has, and refuses an older or a newer one by name (docs/DESIGN.md, "The module table"). */
enum {
    TKP_ABI_OLDEST = 2,     /* one struct tkp_impl per backend */
    TKP_ABI_DTYPES = 3,     /* struct tkp_problem.dtype, struct tkp_impl.dtypes */
    TKP_ABI_STATISTICS = 4, /* struct tkp_algo.statistics; tkp_impl.stats fills the totals of
                               that table (struct tkp_stats) */
    TKP_ABI_SAMPLING = 5,   /* per-row seeds, offsets and min-p: struct tkp_io.row_seed,
                               row_offset, min_p, struct tkp_problem.row_keyed, the op TKP_MINP
                               (an older module would ignore them and keep or draw something
                               else, so it is never given them) */
    TKP_ABI = 5,            /* this harness's version: the newest it loads */
};

/* Return codes of init/run and of the harness helpers. */
enum tkp_status {
    TKP_OK = 0,
    TKP_EUNSUPPORTED, /* the module cannot do this problem; the message says why */
    TKP_EINVAL,       /* bad input or option value */
    TKP_ENOMEM,       /* host or device allocation failed */
    TKP_EDEVICE,      /* a CUDA call failed */
};

/* ops: which filters the module implements. TKP_MINP (since TKP_ABI_SAMPLING): min-p, with
 * whichever of the others the module has (docs/SEMANTICS.md, "min-p"); a problem asks for it
 * when a row has min_p > 0, and a module without the bit is refused by name. */
enum { TKP_TOPK = 1u, TKP_TOPP = 2u, TKP_TOPK_TOPP = 4u, TKP_MINP = 8u };
/* outputs: what the module returns. */
enum { TKP_OUT_SET = 1u, TKP_OUT_SAMPLE = 2u };
/* backends */
enum tkp_backend { TKP_CPU = 1u, TKP_GPU = 2u };
/* flags */
/* TKP_PEER: a peer library, the struct tkp_algo inside a struct tkp_peer
 * (harness/module/peers.h, docs/PEERS.md), run through the Python bridge with no
 * implementations, or native (its GPU implementation here, run in-process); the harness reports
 * its exactness instead of failing it. No module sets it. */
enum { TKP_EXACT = 1u, TKP_DETERMINISTIC = 2u, TKP_NOT_IMPLEMENTED = 4u, TKP_PEER = 8u };

struct tkp_error {
    char msg[512];
};

/* ---- options: a static table the generic code parses, prints and validates ---- */
/* TKP_OPT_ENUM_QUIET: an enum left out of the options text (tkp_options_format) while at its
 * default, so that an option added later leaves the keys of the cells that do not set it as
 * they were (`topkp compare` and `--resume` pair cells by key, which holds the options). */
enum tkp_opt_type { TKP_OPT_INT, TKP_OPT_DOUBLE, TKP_OPT_ENUM, TKP_OPT_ENUM_QUIET };
#define TKP_OPT_IS_ENUM(o) ((o)->type == TKP_OPT_ENUM || (o)->type == TKP_OPT_ENUM_QUIET)

struct tkp_option {
    const char *name, *help;
    enum tkp_opt_type type;
    size_t offset;               /* into the module's options struct (int or double) */
    double def, min, max;        /* for ENUM: def is the index into choices */
    const char *const *choices;  /* ENUM only, NULL-terminated */
};

/* ---- one problem: the shape the harness plans and the module inits for ---- */
struct tkp_problem {
    int64_t batch, vocab, stride; /* stride >= vocab, in floats */
    enum tkp_backend backend;
    unsigned ops;                 /* union of TKP_TOPK/TOPP/TOPK_TOPP over the rows */
    unsigned outputs;             /* what the caller wants (a subset of the module's) */
    int32_t k_max;                /* largest enabled k over the rows (0 when none) */
    int32_t draws;                /* samples per row for TKP_OUT_SAMPLE */
    int64_t set_max;              /* largest top-k set over the rows (vocab for a row with
                                     top-k off) */
    enum tkp_dtype dtype;         /* the element type of io.logits (TKP_F32 unless the
                                     backend's tkp_impl.dtypes has it) */
    int32_t row_keyed;            /* 1: the runs carry io.row_seed or io.row_offset (since
                                     TKP_ABI_SAMPLING) */
};

/* ---- the buffers of one run (host pointers on the CPU, device pointers on the GPU) ---- */
struct tkp_io {
    const void *logits;    /* [batch, stride] of problem.dtype: float, or the 16-bit encodings
                              (uint16_t) of algos/common/half.h */
    const int32_t *k;      /* [batch]; k <= 0 or k >= vocab: top-k off */
    const float *p;        /* [batch]; p >= 1: top-p off */
    uint8_t *kept;         /* [batch, vocab] or NULL */
    int64_t *samples;      /* [batch, draws] or NULL */
    uint64_t seed, offset; /* Philox key and counter offset (batch keying) */
    /* Since TKP_ABI_SAMPLING: row_seed, row_offset and min_p (the harness refuses an older
     * module a problem with per-row keys or min-p on, harness/module/apply.c).
     * Per-row keying (docs/SEMANTICS.md, "Sampling: two keying modes"): [batch] each, or
     * NULL; with either one given, row r draws with (row_seed[r] or seed, row_offset[r] or
     * offset) and not its row index (tkp_row_key, common/philox.h). Read at run time, so a
     * captured CUDA graph replays with whatever the arrays hold then. */
    const uint64_t *row_seed, *row_offset;
    const float *min_p;    /* [batch] or NULL (min-p off everywhere); <= 0: off on that row */
};

/* ---- statistics: a static table each module declares, one results column each ---- */
/* One statistic of a module. Its value in a results row is the run's total divided by the
 * rows; a name is one column of every results file, shared by the modules that declare it
 * (with one unit), NaN in the cells of a module that does not report it (docs/DESIGN.md,
 * "The results file (output of `run`): a contract"). */
struct tkp_stat {
    const char *name;    /* the results column: [a-z0-9_], not one of the fixed columns */
    const char *unit;    /* of the per-row value, e.g. "rounds per row" */
    const char *meaning; /* what is counted, for `topkp list` and the reader */
};

enum { TKP_MAX_STATS = 16 }; /* statistics per module */
#define TKP_STAT_BIT(i) (1u << (i))
#define TKP_STAT_ALL(n) ((1u << (n)) - 1u) /* the first n statistics */

/* A module declares its statistics once, as a list of X(id, name, unit, meaning) rows, each
 * line ending in a backslash (the list closes with a comment line): the enum of their indices
 * is `enum { LIST(TKP_STAT_ID) <M>_STAT_COUNT };`, the table `{ LIST(TKP_STAT_ROW) { NULL } }`,
 * so that a statistic is one row plus the code that counts it (a backend that reports them
 * all says TKP_STAT_ALL(<M>_STAT_COUNT)). */
#define TKP_STAT_ID(id, name, unit, meaning) id,
#define TKP_STAT_ROW(id, name, unit, meaning) { name, unit, meaning },

/* Statistics of the last run over the rows it ran. total[i] is statistic i of the module's
 * table, summed over the rows (every backend means the same by it); `reported` says which
 * apply to these options and this problem (TKP_STAT_BIT(i); 0: none). */
struct tkp_stats {
    int64_t rows;
    double total[TKP_MAX_STATS];
    unsigned reported;
};

/* One backend's implementation of a module. `state_size` bytes of zeroed state are handed to
 * init, run, stats and fini; the workspace (host memory on the CPU, device memory on the GPU)
 * is what init asks for. */
struct tkp_impl {
    size_t state_size;
    /* Refusals of this backend only (e.g. a kernel's index width); NULL: none. 1 = yes; 0 =
     * no, *why says why. Called after the module's own supports(). */
    int (*supports)(const struct tkp_problem *pb, const void *opts, const char **why);
    int (*init)(void *state, const struct tkp_problem *pb, const void *opts,
                size_t *workspace_bytes, struct tkp_error *err);
    /* Runs the whole batch; never refuses a problem that supports() accepted. */
    int (*run)(void *state, const struct tkp_io *io, void *workspace, void *stream,
               struct tkp_error *err);
    /* The statistics of the LAST run (NULL: none): every run of an instance repeats the same
     * work, so the harness reads them once after its repetitions and divides by `rows`.
     * Called for a module of version TKP_ABI_STATISTICS or later only. */
    void (*stats)(const void *state, struct tkp_stats *out);
    void (*fini)(void *state); /* NULL: nothing to free */
    /* The 16-bit element types this backend reads besides float32, as TKP_DTYPE_BIT(...)
     * bits; 0: float32 only (and for a module older than TKP_ABI_DTYPES). A 16-bit row must
     * give the kept set and the draws of its float32 upcast, bit for bit (docs/SEMANTICS.md). */
    unsigned dtypes;
};

#define TKP_DTYPE_BIT(t) (1u << (t))

/* The GPU implementation `sym` (a row of algos/common/tkp_gpu_impl.c, compiled only where the
 * kernels are): its address in a CUDA build, NULL (no GPU offered) otherwise. */
#ifdef TKP_HAVE_CUDA
#define TKP_GPU_IMPL(sym) (&(sym))
#else
#define TKP_GPU_IMPL(sym) ((const struct tkp_impl *)0)
#endif

struct tkp_algo {
    int abi; /* the contract version it was written for (TKP_ABI for a new module); first, so
                that the struct can grow */
    const char *name, *summary;
    unsigned ops, outputs, flags;
    const struct tkp_option *options; /* terminated by an entry with name == NULL */
    size_t opts_size;

    /* Refusals that hold on every backend (the options, the problem's shape); NULL: none.
     * 1 = yes; 0 = no, *why says why. */
    int (*supports)(const struct tkp_problem *pb, const void *opts, const char **why);
    /* 1 when these options give up exactness on purpose (NULL: never). */
    int (*approximate)(const void *opts);
    /* The implementation of each backend; NULL: not offered, or not in this build. */
    const struct tkp_impl *cpu, *gpu;
    int64_t max_set; /* the largest top-k set the module can hold (0: no limit); the test
                        suite clamps k to it */
    /* since TKP_ABI_STATISTICS: what stats() counts, indexed as struct tkp_stats.total;
     * terminated by an entry with name == NULL (NULL: none) */
    const struct tkp_stat *statistics;
};

/* ---- the contract's helpers (harness/module/registry.c) ---- */
/* TKP_CPU | TKP_GPU: the backends a module offers in this build (its impls), or a peer's. */
unsigned tkp_algo_backends(const struct tkp_algo *a);
/* The implementation of backend b; NULL when there is none. */
const struct tkp_impl *tkp_algo_impl(const struct tkp_algo *a, enum tkp_backend b);
/* TKP_EINVAL, naming the module and both versions, when a->abi is older than TKP_ABI_OLDEST
 * or newer than TKP_ABI. */
int tkp_algo_check_abi(const struct tkp_algo *a, struct tkp_error *err);
/* What the module's version has (older ones: none): the 16-bit types `impl` reads, its
 * statistics table (NULL: none) and how many rows it has. */
unsigned tkp_impl_dtypes(const struct tkp_algo *a, const struct tkp_impl *impl);
const struct tkp_stat *tkp_algo_statistics(const struct tkp_algo *a);
int tkp_algo_stat_count(const struct tkp_algo *a);
/* The index of statistic `name` in the module's table, or -1. */
int tkp_algo_stat_index(const struct tkp_algo *a, const char *name);

/* ---- registry (harness/module/registry.c) ---- */
extern const struct tkp_algo *const tkp_algos[]; /* NULL-terminated */
/* The statistics of every module, each name once: the n_first names of `first`, then those
 * of each module's table not yet named, in tkp_algos[] order (at most cap into names).
 * Returns how many there are. */
size_t tkp_stat_union(const char *const *first, size_t n_first, const char **names, size_t cap);
/* A module or a peer (harness/module/peers.h) by name; NULL when neither has it. */
const struct tkp_algo *tkp_algo_find(const char *name);

/* ---- options (algos/common/options.c) ---- */
const struct tkp_option *tkp_option_find(const struct tkp_algo *a, const char *name);
void tkp_options_defaults(const struct tkp_algo *a, void *opts);
/* Parse `value` (a number or an enum choice) into option `name`; TKP_EINVAL with a message. */
int tkp_option_set(const struct tkp_algo *a, void *opts, const char *name, const char *value,
                   struct tkp_error *err);
/* Set a numeric value (enum options accept the choice index). */
int tkp_option_set_number(const struct tkp_algo *a, void *opts, const char *name, double v,
                          struct tkp_error *err);
/* "name=value,name=value" in table order, defaults included (but a quiet enum's). */
void tkp_options_format(const struct tkp_algo *a, const void *opts, char *buf, size_t n);
/* The same of the options whose bit is set in `given` (bit i: a->options[i]), quiet or not. */
void tkp_options_format_given(const struct tkp_algo *a, const void *opts, unsigned given,
                              char *buf, size_t n);
void tkp_option_value(const struct tkp_option *o, const void *opts, char *buf, size_t n);
/* A forced cluster size from environment variable `name` (an experiment and test hook of the
 * GPU samplers): *size = 0 when it is unset or empty, else 1, 2, 4, 8 or 16; any other value
 * is TKP_EINVAL with a message naming the variable and the value. */
int tkp_env_cluster(const char *name, int *size, struct tkp_error *err);
/* The choices of a GPU sampler's `cluster` option (docs/DESIGN.md, "Variants and the dispatch
 * table"): "auto" (index 0: the module's cost model), then the sizes 1, 2, 4, 8 and 16. */
extern const char *const tkp_cluster_choices[];
/* The cluster size a plan is asked for: the `cluster` option's (its index into
 * tkp_cluster_choices) when it is not auto, else environment variable `env`'s
 * (tkp_env_cluster); *size = 0 when neither asks. The module takes it where the device can run
 * it, else its cost model. */
int tkp_forced_cluster(int option, const char *env, int *size, struct tkp_error *err);

void tkp_error_set(struct tkp_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same from a va_list. A message longer than msg keeps its reason: its longest words
 * (paths) are cut in their middles first (algos/common/options.c). */
void tkp_error_vset(struct tkp_error *err, const char *fmt, va_list ap);

#ifdef __cplusplus
}
#endif
#endif
