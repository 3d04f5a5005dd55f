/* peers_util.c — see peers_util.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "peers_util.h"
#include "test.h"

int torch_ready(void)
{
    char out[4096];
    if (run_cmd(out, sizeof out, PYTHON " -c 'import torch, numpy'") != 0) {
        test_skip("python3-torch not installed for " PYTHON);
        return 0;
    }
    return 1;
}

char tsv[1 << 20];

int run_peers(const char *name, const char *env, const char *config, char *log, size_t n)
{
    char cfg[64], h5[600];
    snprintf(cfg, sizeof cfg, "%s.lua", name);
    const char *path = write_scratch(cfg, config);
    snprintf(h5, sizeof h5, "%s/%s.h5", scratch_dir(), name);
    int rc = run_cmd(log, n, "rm -f %s; env TOPKP_PYTHON=" PYTHON " %s %s run %s -o %s --backend cpu",
                     h5, env, topkp_bin(), path, h5);
    if (rc == 0)
        rc = run_cmd(tsv, sizeof tsv, "%s export %s", topkp_bin(), h5);
    return rc;
}

int cell_field(const char *algo, const char *dataset, const char *mode, const char *col,
               char *out, size_t n)
{
    int c_algo = tsv_column(tsv, "algo"), c_data = tsv_column(tsv, "dataset");
    int c_mode = tsv_column(tsv, "mode"), c_want = tsv_column(tsv, col);
    for (char *line = strchr(tsv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char a[64], d[256], m[32];
        tsv_field(line + 1, c_algo, a, sizeof a);
        tsv_field(line + 1, c_data, d, sizeof d);
        tsv_field(line + 1, c_mode, m, sizeof m);
        if (strcmp(a, algo) == 0 && (!dataset || strcmp(d, dataset) == 0) &&
            (!mode || strcmp(m, mode) == 0)) {
            tsv_field(line + 1, c_want, out, n);
            return 1;
        }
    }
    out[0] = 0;
    return 0;
}

long long cell_int(const char *algo, const char *dataset, const char *mode, const char *col)
{
    char v[64];
    return cell_field(algo, dataset, mode, col, v, sizeof v) ? atoll(v) : -1;
}
