/* out_file.c — see out_file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_error.h"
#include "interrupt.h"
#include "out_file.h"

#define TMP_TRIES 100 /* OUT.partial, then OUT.partial.1 ... when those exist */

/* Is the output one of the inputs, exists without force, or held by a run? */
static int check_output(struct tkp_out *o, const char *const *inputs, int n, int force,
                        struct tkp_error *err)
{
    struct stat so, si;
    if (stat(o->path, &so) != 0)
        return TKP_OK;
    for (int i = 0; i < n; i++)
        if (stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
            tkp_error_set(err, "%s is the input file %s; refusing to write over it (even with "
                          "--force)", o->path, inputs[i]);
            return TKP_EINVAL;
        }
    if (!force) {
        tkp_error_set(err, "%s exists; pass --force to overwrite it", o->path);
        return TKP_EINVAL;
    }
    if (!S_ISREG(so.st_mode))
        return TKP_OK; /* the rename fails and says so, keeping the written temporary */
    o->lock_fd = open(o->path, O_RDONLY | O_CLOEXEC);
    if (o->lock_fd >= 0 && flock(o->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        tkp_error_set(err, "%s is in use by a topkp run (locked); refusing to write over it "
                      "while the run holds it", o->path);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

int tkp_out_begin(struct tkp_out *o, const char *path, const char *const *inputs, int n,
                  int force, struct tkp_error *err)
{
    *o = (struct tkp_out){ path, "", -1 };
    int rc = check_output(o, inputs, n, force, err);
    if (rc == TKP_OK && strlen(path) + 16 >= sizeof o->tmp) {
        tkp_error_set(err, "%s: the output path is longer than %zu bytes", path,
                      sizeof o->tmp - 16);
        rc = TKP_EINVAL;
    }
    for (int k = 0; rc == TKP_OK && k < TMP_TRIES; k++) {
        if (k)
            snprintf(o->tmp, sizeof o->tmp, "%s.partial.%d", path, k);
        else
            snprintf(o->tmp, sizeof o->tmp, "%s.partial", path);
        const int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            tkp_interrupt_remove(o->tmp);
            return TKP_OK;
        }
        if (errno != EEXIST) {
            tkp_create_error(err, o->tmp, errno);
            rc = TKP_EINVAL;
        }
    }
    if (rc == TKP_OK) {
        tkp_error_set(err, "%s: %s.partial and %d more temporary names beside it exist; remove "
                      "them (earlier writes that were killed?)", path, path, TMP_TRIES - 1);
        rc = TKP_EINVAL;
    }
    o->tmp[0] = 0;
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    o->lock_fd = -1;
    return rc;
}

void tkp_out_abandon(struct tkp_out *o)
{
    if (o->tmp[0])
        unlink(o->tmp);
    tkp_interrupt_remove(NULL);
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    o->lock_fd = -1;
    o->tmp[0] = 0;
}

int tkp_out_finish(struct tkp_out *o, int rc, struct tkp_error *err)
{
    tkp_pause_point("output-written");
    if (rc) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        tkp_error_set(err, "%s: not written (%s); %s is left as it was", o->path, why, o->path);
        unlink(o->tmp);
    } else if (rename(o->tmp, o->path) != 0) {
        tkp_error_set(err, "%s: not written: cannot rename %s to it (%s); the complete output "
                      "is kept in %s", o->path, o->tmp, strerror(errno), o->tmp);
        rc = TKP_EINVAL;
    }
    o->tmp[0] = 0; /* renamed, or removed above */
    tkp_out_abandon(o);
    return rc;
}
