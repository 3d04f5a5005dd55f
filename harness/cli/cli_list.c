/* cli_list.c — `topkp list` (docs/DESIGN.md, "The command line"): the modules with their ops,
 * outputs, backends, flags, --set options and statistics, the peers (and whether their package
 * imports here, docs/PEERS.md), the datasets, the sweep axes of harness/plan/axes.c and the named
 * limits (docs/CONFIGS.md, "Configs"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../datasets/datasets.h"
#include "axes.h"
#include "cli.h"
#include "limits_config.h"
#include "peer_cell.h"
#include "peers.h"

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
        if (TKP_OPT_IS_ENUM(opt)) {
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
    flag_names(tkp_algo_backends(a), backends, b, sizeof b);
    printf("  %-11s %s\n    ops=%s outputs=%s backends=%s%s%s", a->name, a->summary, o, u, b,
           a->flags & TKP_EXACT ? " exact" : "",
           a->flags & TKP_NOT_IMPLEMENTED ? " (not implemented)" : "");
    const struct tkp_peer *peer = tkp_peer_of(a);
    if (peer)
        printf(" package=%s", peer->package);
    putchar('\n');
}

/* The module's statistics table: each is a results column of that name (algos/tkp.h). */
static void print_statistics(const struct tkp_algo *a)
{
    for (const struct tkp_stat *st = tkp_algo_statistics(a); st && st->name; st++)
        printf("    stat %s (%s)  %s\n", st->name, st->unit, st->meaning);
}

/* What the peer worker said of each peer, by name. */
struct peer_probe {
    char name[64], info[400], cast[200];
    int available;
};
struct probe_list {
    struct peer_probe peer[32];
    int n;
};

static void on_probe(const char *name, int available, const char *info, const char *cast,
                     void *ctx)
{
    struct probe_list *l = ctx;
    if (l->n == 32)
        return;
    struct peer_probe *p = &l->peer[l->n++];
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->info, sizeof p->info, "%s", info);
    snprintf(p->cast, sizeof p->cast, "%s", cast);
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
        const struct tkp_algo *a = &tkp_peers[i]->algo;
        print_algo(a);
        const struct peer_probe *p = NULL;
        for (int j = 0; j < found.n; j++)
            if (strcmp(found.peer[j].name, a->name) == 0)
                p = &found.peer[j];
        if (tkp_peer_of(a)->native)
            printf("    native (no Python): %s%s\n", a->gpu ? "built here" : a->cpu ? "CPU built "
                   "here; GPU: " : "", a->gpu ? "" : tkp_peer_of(a)->native);
        else if (probe && rc)
            printf("    importable here: unknown (%s)\n", err.msg);
        else if (probe && !p)
            printf("    importable here: unknown (peers/catalog.py does not list it)\n");
        else if (probe) {
            printf("    importable here: %s (%s)\n", p->available ? "yes" : "no", p->info);
            if (p->cast[0])
                printf("    16-bit logits: %s\n", p->cast);
        }
        print_options(a);
    }
}

/* The sweep axes of harness/plan/axes.c: the keys of a sweep that make its cross product. */
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

/* The named limits of harness/config/limits_config.h and limits_files.h (docs/CONFIGS.md, "Configs"). */
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
    LIMIT(TKP_READ_CPU_SECONDS);
    LIMIT(TKP_READ_CPU_BYTES_PER_S);
#undef LIMIT
}

const char LIST_USAGE[] =
    "usage: topkp list [--no-probe]\n"
    "\n"
    "Prints the modules (their ops, outputs, backends, --set options and statistics), the peer\n"
    "libraries, the datasets, the sweep axes and the limits of harness/config/limits_config.h and\n"
    "harness/common/limits_files.h.\n"
    "\n"
    "  --no-probe   do not start Python to ask which peer packages import here\n";

int cmd_list(int argc, char **argv)
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
        print_statistics(tkp_algos[i]);
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
