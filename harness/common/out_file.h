/* out_file.h — writing an output file without destroying anything (docs/ROBUSTNESS.md,
 * "Outputs that destroy"): `merge`, `apply` and `gen` write a temporary file that this process
 * creates (O_EXCL, so never an input nor any file that was there) beside the output, then rename
 * it over the output; a failed or interrupted write removes that temporary and nothing else.
 * The output is refused when it is one of the inputs (the same file by device and inode,
 * whatever the path), when it exists without force, and when a topkp run holds it (its flock,
 * results_open.c), whose lock is then held until the rename. */
#ifndef TKP_OUT_FILE_H
#define TKP_OUT_FILE_H

#include <limits.h>

#include "../algos/tkp.h"

struct tkp_out {
    const char *path;       /* the output's final name */
    char tmp[PATH_MAX + 32]; /* the temporary this process created; "" when none */
    int lock_fd;            /* an existing output, locked (LOCK_EX) until the end; -1 */
};

/* Check the output against inputs[0..n) and force, then create the temporary. TKP_OK, or
 * TKP_EINVAL with err naming the file and why. */
int tkp_out_begin(struct tkp_out *o, const char *path, const char *const *inputs, int n,
                  int force, struct tkp_error *err);
/* rc: how writing the temporary went. TKP_OK: rename it over the output (a failed rename keeps
 * it, named in err). Otherwise remove it and say that the output was not written (err keeps
 * the reason). Returns rc, or TKP_EINVAL when the rename failed. */
int tkp_out_finish(struct tkp_out *o, int rc, struct tkp_error *err);
/* Remove the temporary, if still there (nothing was written: err is left as it is). */
void tkp_out_abandon(struct tkp_out *o);

#endif
