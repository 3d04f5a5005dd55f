/* cli.h — what the files of the command line share, private to them (docs/DESIGN.md, "The
 * command line"): the argument helpers (cli_args.c) and each command's usage text and function,
 * which main.c's table of commands names. The commands: cli_list.c (list), cli_run.c (run,
 * apply, gen), cli_read.c (export, compare, info), cli_merge.c (merge). Usage errors exit 2, naming the argument;
 * other errors print `topkp CMD: message` on stderr and exit 1. */
#ifndef TKP_CLI_H
#define TKP_CLI_H

#include "../algos/tkp.h"

/* cli_args.c: the argument helpers. */
int bad_arg(const char *cmd, const char *arg);
int missing(const char *cmd, const char *what);
const char *flag_value(const char *cmd, int argc, char **argv, int *i);
int positional(const char *cmd, const char *arg, const char **slot);
int fail(const char *what, const char *msg);
long long int_arg(const char *cmd, const char *flag, const char *v, long long lo, long long hi);
/* Text values through the gate (algos/common/gate.h): a name, a comma list of names (no item
 * empty), an output path. Each exits 2 naming the byte. */
const char *name_arg(const char *cmd, const char *flag, const char *v);
const char *name_list_arg(const char *cmd, const char *flag, const char *v);
const char *path_arg(const char *cmd, const char *flag, const char *v);
/* A uint64 (seeds, offsets), exact to 2^64 - 1. */
unsigned long long u64_arg(const char *cmd, const char *flag, const char *v);
/* A float of domain d (p, min-p: tkp_dom_p...; algos/common/gate.h). */
struct tkp_domain;
float float_arg(const char *cmd, const char *flag, const char *v, const struct tkp_domain *d);
enum tkp_backend default_backend(void);
/* --backend's value; gpu in a build without CUDA exits 2, unless plan_only (a --dry-run, which
 * only plans: the dispatch table of a GPU shows there, docs/DESIGN.md "Variants and the
 * dispatch table"). */
enum tkp_backend backend_arg(const char *cmd, const char *v, int plan_only);

/* The commands: usage text (`topkp help CMD`) and function, given the arguments after CMD. */
extern const char LIST_USAGE[], RUN_USAGE[], APPLY_USAGE[], GEN_USAGE[], EXPORT_USAGE[],
    COMPARE_USAGE[], INFO_USAGE[], MERGE_USAGE[];
int cmd_list(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_merge(int argc, char **argv);

#endif
