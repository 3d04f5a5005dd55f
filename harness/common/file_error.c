/* file_error.c — see file_error.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "file_error.h"

void tkp_create_error(struct tkp_error *err, const char *path, int errnum)
{
    char dir[PATH_MAX + 1];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ". (the current folder)");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    const char *why = errnum ? strerror(errnum) : "HDF5 refused";
    struct stat st;
    const int denied = errnum == EACCES || errnum == EPERM || errnum == EROFS;
    if (denied && lstat(path, &st) == 0)
        tkp_error_set(err, "%s: cannot create: it exists and is not writable (%s)", path, why);
    else if (denied)
        tkp_error_set(err, "%s: cannot create: its folder %s is not writable (%s)", path, dir, why);
    else if (errnum == ENOENT)
        tkp_error_set(err, "%s: cannot create: its folder %s does not exist (%s)", path, dir, why);
    else if (errnum == ENOTDIR)
        tkp_error_set(err, "%s: cannot create: a part of its folder %s is not a folder (%s)", path,
                      dir, why);
    else
        tkp_error_set(err, "%s: cannot create: %s", path, why);
}
