/* cli_read.c — the commands that read a results file (docs/DESIGN.md, "The command line"):
 * `export` (its cells as TSV, CSV or JSON: export.c), `compare` (two files' median times, cell
 * by cell: compare.c) and `info` (provenance and runs). Each reads the file in a child process
 * (read_guard.c), so a file that crashes libhdf5 is an error naming it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "cli.h"
#include "compare.h"
#include "file_error.h"
#include "out_file.h"
#include "results.h"


const char EXPORT_USAGE[] =
    "usage: topkp export RESULTS.h5 [--format tsv|csv|json] [--sweep NAME] [-o FILE [--force]]\n"
    "\n"
    "Prints the cells of every sweep of a results file (of `topkp run`) on stdout: a first\n"
    "column `sweep`, then every field, by name. A float that does not apply to a cell (the\n"
    "times of an untimed cell, a statistic its module does not report) is nan (null in JSON).\n"
    "\n"
    "  --format F     tsv (the default: one header line), csv (RFC 4180 quoting) or json (an\n"
    "                 array of objects)\n"
    "  --sweep NAME   only this sweep's cells\n"
    "  -o FILE        write to FILE instead (through a temporary renamed over it; never over\n"
    "                 RESULTS.h5, over an existing FILE only with --force)\n";

/* export into `out` as out_file.h writes an output (docs/ROBUSTNESS.md, "Outputs that
 * destroy"). */
static int export_to(const char *file, const char *sweep, enum tkp_export_format format,
                     const char *out, int force)
{
    struct tkp_error err = { "" };
    struct tkp_out o;
    if (tkp_out_begin(&o, out, &file, 1, force, &err))
        return fail("export", err.msg);
    FILE *f = fopen(o.tmp, "w");
    int rc = TKP_EINVAL;
    if (!f)
        tkp_create_error(&err, o.tmp, errno);
    else
        rc = tkp_results_export_as(file, sweep, format, f, &err);
    if (f && fclose(f) != 0 && rc == TKP_OK) {
        tkp_error_set(&err, "%s: cannot write: %s", o.tmp, strerror(errno));
        rc = TKP_EINVAL;
    }
    return tkp_out_finish(&o, rc, &err) ? fail("export", err.msg) : 0;
}

int cmd_export(int argc, char **argv)
{
    const char *file = NULL, *sweep = NULL, *out = NULL;
    int force = 0;
    enum tkp_export_format format = TKP_EXPORT_TSV;
    for (int i = 0; i < argc; i++) {
        int rc = 0;
        if (strcmp(argv[i], "--sweep") == 0)
            sweep = name_arg("export", "--sweep", flag_value("export", argc, argv, &i));
        else if (strcmp(argv[i], "-o") == 0)
            out = path_arg("export", "-o", flag_value("export", argc, argv, &i));
        else if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (strcmp(argv[i], "--format") == 0) {
            const char *f = flag_value("export", argc, argv, &i);
            if (tkp_export_format_of(f, &format) != 0) {
                fprintf(stderr, "topkp export: --format needs tsv, csv or json, got '%s'\n",
                        tkp_gate_shown(f));
                return 2;
            }
        } else
            rc = positional("export", argv[i], &file);
        if (rc)
            return rc;
    }
    if (!file)
        return missing("export", "no RESULTS.h5 given");
    if (out)
        return export_to(file, sweep, format, out, force);
    struct tkp_error err = { "" };
    return tkp_results_export_as(file, sweep, format, stdout, &err) ? fail("export", err.msg)
                                                                    : 0;
}

const char COMPARE_USAGE[] =
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

int cmd_compare(int argc, char **argv)
{
    const char *a = NULL, *b = NULL, *sweep = NULL;
    double threshold = 0.02;
    for (int i = 0; i < argc; i++) {
        int rc = 0;
        if (strcmp(argv[i], "--sweep") == 0)
            sweep = name_arg("compare", "--sweep", flag_value("compare", argc, argv, &i));
        else if (strcmp(argv[i], "--threshold") == 0) {
            static const struct tkp_domain relative = { "a relative difference", 0, 0, 10 };
            threshold = float_arg("compare", "--threshold", flag_value("compare", argc, argv, &i),
                                  &relative);
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

const char INFO_USAGE[] =
    "usage: topkp info RESULTS.h5\n"
    "\n"
    "Prints a results file's root attributes (provenance: version, commit, host, device,\n"
    "copy bandwidth) and every run recorded under /runs, as name<TAB>value lines.\n";

int cmd_info(int argc, char **argv)
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
