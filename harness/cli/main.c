/* main.c — the topkp command line. Each subcommand is one row of `commands` (name, summary,
 * usage text, function), below:
 *   topkp list | run | apply | gen | export | compare | info | merge   (topkp help CMD: its
 *   flags)
 *   topkp --help, -h, help [CMD], CMD --help: usage on stdout, exit 0; topkp --version
 * Usage errors (an unknown option, an extra argument, a bad value) exit 2 with a message naming
 * the argument; other errors go to stderr with exit 1. The commands themselves are in
 * cli_list.c, cli_run.c, cli_read.c and cli_merge.c, their argument helpers in cli_args.c (cli.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "cli.h"
#include "h5util.h"
#include "interrupt.h"
#include "provenance.h"
#include "version.h"

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
    { "merge", "join the shard files of a split run into one results file", MERGE_USAGE,
      cmd_merge },
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
          "`topkp --version` prints the version. docs/USAGE.md has a five-minute tour.\n", out);
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
        fprintf(stderr, "topkp help: unknown command '%s' (see `topkp --help`)\n",
                tkp_gate_shown(argv[0]));
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
    tkp_interrupt_main();
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
            fprintf(stderr, "topkp: unexpected argument '%s' after --version\n",
                    tkp_gate_shown(argv[2]));
            return 2;
        }
        printf("topkp %s (commit %s)\n", TKP_VERSION, TKP_GIT_COMMIT);
        return 0;
    }
    const struct command *c = command_find(name);
    if (!c) {
        fprintf(stderr, "topkp: unknown %s '%s' (see `topkp --help`)\n",
                name[0] == '-' ? "option" : "command", tkp_gate_shown(name));
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (is_help(argv[i])) {
            fputs(c->usage, stdout);
            return 0;
        }
    return c->fn(argc - 2, argv + 2);
}
