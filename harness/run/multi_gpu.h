/* multi_gpu.h — `topkp run CONFIG --gpus all|G,... ` and `--workers N` (docs/CLUSTERS.md, "Sweeps
 * across GPUs and hosts"): one child `topkp run CONFIG --shard I/N [--device G] -o
 * FILE.shard-I.h5` per GPU (or per CPU worker), the other flags passed through, one progress
 * line for the whole run, and a merge of the shard files into FILE.h5 at the end. A child that
 * fails is named with its log; its shard files are kept for --resume. */
#ifndef TKP_MULTI_GPU_H
#define TKP_MULTI_GPU_H

#include "runner.h"

struct tkp_multi_args {
    const char *gpus; /* --gpus all|0,1,...: GPU backend, one child per device (NULL: none) */
    int workers;      /* --workers N: N children on the CPU backend (0: none) */
};

#define TKP_MAX_CHILDREN 256 /* processes of one --gpus or --workers run */

/* The form of --gpus all|G,...: distinct device numbers 0-1023 separated by commas, at most
 * TKP_MAX_CHILDREN, into devices[]; returns their count, 0 for `all`, or -1 with err naming
 * the value. No device is looked at (tkp_run_multi checks that they exist). */
int tkp_gpus_parse(const char *spec, int *devices, struct tkp_error *err);

int tkp_run_multi(const struct tkp_run_args *a, const struct tkp_multi_args *m,
                  struct tkp_error *err);

#endif
