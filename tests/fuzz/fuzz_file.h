/* fuzz_file.h — the readers under fuzz take a path, not a buffer: each target writes the
 * input to one temporary file per process (in $TMPDIR, else /tmp) and hands its path on.
 * Header-only so each target stays one C file (docs/USAGE.md, "Robustness checks"). */
#ifndef TKP_FUZZ_FILE_H
#define TKP_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Write data[0..size) to this process's scratch file named after `suffix`; NULL on failure. */
static const char *fuzz_write_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[512];
    if (!path[0]) {
        /* the readers' and the config's child processes off (harness/common/read_guard.h) */
        setenv("TKP_GUARDS_IN_PROCESS", "1", 1);
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/topkp-fuzz-%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(),
                 suffix);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    size_t put = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || put != size)
        return NULL;
    return path;
}

#endif
