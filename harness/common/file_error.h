/* file_error.h — the error of a file that could not be created, naming its folder when the
 * folder is the cause (docs/RESULTS.md, "Results": hostile files and disks). */
#ifndef TKP_FILE_ERROR_H
#define TKP_FILE_ERROR_H

#include "../algos/tkp.h"

/* "PATH: cannot create: ..." for errno `errnum` (0: HDF5 refused without one): a folder that is
 * not writable, missing or not a folder is named as such. */
void tkp_create_error(struct tkp_error *err, const char *path, int errnum);

#endif
