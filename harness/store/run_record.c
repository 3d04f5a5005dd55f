/* run_record.c — see run_record.h. Identities are CRC-32s (zlib): of the executable's bytes
 * (/proc/self/exe), and of the loaded Lua files' names and texts in load order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "h5util.h"
#include "provenance.h"
#include "run_record.h"
#include "version.h"
#include "interrupt.h"

static unsigned long crc_of_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned long crc = crc32(0L, Z_NULL, 0);
    if (!f)
        return crc;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        crc = crc32(crc, buf, (uInt)n);
    fclose(f);
    return crc;
}

void tkp_run_identity_of(const struct tkp_plan *plan, struct tkp_run_identity *id)
{
    snprintf(id->commit, sizeof id->commit, "%s", TKP_GIT_COMMIT);
    snprintf(id->binary_id, sizeof id->binary_id, "%08lx", crc_of_file("/proc/self/exe"));
    unsigned long crc = crc32(0L, Z_NULL, 0);
    for (size_t i = 0; i < plan->n_files; i++) {
        const struct tkp_config_file *f = &plan->files[i];
        crc = crc32(crc, (const unsigned char *)f->name, (uInt)strlen(f->name) + 1);
        crc = crc32(crc, (const unsigned char *)f->text, (uInt)strlen(f->text) + 1);
    }
    snprintf(id->config_hash, sizeof id->config_hash, "%08lx", crc);
}

/* The first of this plan's files whose text differs from the file's /config copy (or is
 * missing there), or NULL when all match. */
static const char *changed_config(hid_t file, const struct tkp_plan *plan)
{
    if (!h5_exists(file, "/config"))
        return plan->n_files ? plan->files[0].name : NULL;
    hid_t g = H5Gopen2(file, "/config", H5P_DEFAULT);
    const char *changed = NULL;
    for (size_t i = 0; i < plan->n_files && !changed; i++) {
        char link[256];
        tkp_results_config_link(plan->files[i].name, link, sizeof link);
        char *stored = h5_read_text(g, link);
        if (!stored || strcmp(stored, plan->files[i].text) != 0)
            changed = plan->files[i].name;
        free(stored);
    }
    H5Gclose(g);
    return changed;
}

int tkp_run_check_resume(struct tkp_results *r, const char *path, const struct tkp_plan *plan,
                         const struct tkp_run_identity *id, int force, struct tkp_error *err)
{
    const hid_t file = (hid_t)tkp_results_handle(r);
    const char *changed = changed_config(file, plan);
    char stored[128] = "", what[600] = "";
    if (changed)
        snprintf(what, sizeof what, "its config differs from this run's (%s changed)", changed);
    const int has_id = tkp_results_attr_get(r, "binary_id", stored, sizeof stored) == 0;
    if (!has_id)
        tkp_results_attr_get(r, "git_commit", stored, sizeof stored);
    const char *mine = has_id ? id->binary_id : id->commit;
    if (!changed && stored[0] && strcmp(stored, mine) != 0)
        snprintf(what, sizeof what, "it was written by another binary (%s %s, this one %s)",
                 has_id ? "binary_id" : "git_commit", stored, mine);
    if (!what[0] || force)
        return TKP_OK;
    tkp_error_set(err, "%s: refusing to resume: %s; pass --force to append anyway (the run is "
                       "recorded under /runs with its config)", path, what);
    return TKP_EINVAL;
}

/* Each ablation's baseline and variants (plan.h), as the attribute "ablation:<sweep>" =
 * "<baseline>/<first variant>/<second>/..." of the run record, which `topkp info` prints and
 * scripts/figures.sh reads (docs/FIGURES.md, "Figures"). At most 32 KiB of them (a run record's
 * attributes share one HDF5 object header); the figures fall back to the row order for the
 * rest. */
static void write_ablations(hid_t g, const struct tkp_plan *plan)
{
    size_t used = 0;
    for (size_t i = 0; i < plan->n_ablations; i++) {
        const struct tkp_ablation *a = &plan->ablations[i];
        char name[80];
        size_t len = strlen(a->baseline) + 1 + strlen(a->variants);
        used += len + sizeof name;
        if (len >= 4000 || used > 32768) /* `topkp info` prints values up to 4 KiB */
            continue;
        char *value = malloc(len + 1);
        if (!value)
            continue;
        snprintf(value, len + 1, "%s/%s", a->baseline, a->variants);
        snprintf(name, sizeof name, "ablation:%s", a->sweep);
        h5_set_attr_str(g, name, value);
        free(value);
    }
}

/* The number of /runs/<n> groups already in the file. */
static int run_count(hid_t file)
{
    if (!h5_exists(file, "/runs"))
        return 0;
    hid_t g = H5Gopen2(file, "/runs", H5P_DEFAULT);
    H5G_info_t info;
    const int n = H5Gget_info(g, &info) >= 0 ? (int)info.nlinks : 0;
    H5Gclose(g);
    return n;
}

static int record_begin(struct tkp_results *r, const struct tkp_plan *plan,
                        const struct tkp_run_identity *id, enum tkp_backend backend, int fresh,
                        int forced, int argc, char **argv)
{
    const hid_t file = (hid_t)tkp_results_handle(r);
    const int n = run_count(file);
    if (fresh) {
        tkp_results_attr(r, "binary_id", id->binary_id);
        tkp_results_attr(r, "config_hash", id->config_hash);
    }
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/runs/%d", n);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(file, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    if (g < 0)
        return -1;
    h5_set_attr_str(g, "git_commit", id->commit);
    h5_set_attr_str(g, "binary_id", id->binary_id);
    h5_set_attr_str(g, "config_hash", id->config_hash);
    h5_set_attr_i64(g, "forced", forced);
    gethostname(buf, sizeof buf);
    h5_set_attr_str(g, "host", buf);
    tkp_device_name(backend, buf, sizeof buf);
    h5_set_attr_str(g, "device_name", buf);
    tkp_utc_now(buf, sizeof buf);
    h5_set_attr_str(g, "start_time", buf);
    tkp_command_line(argc, argv, buf, sizeof buf);
    h5_set_attr_str(g, "command_line", buf);
    /* where this run's rows of each sweep start: "sweep=first,..." in plan order */
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < plan->n && used < sizeof buf; i++) {
        const char *sweep = plan->cells[i].sweep;
        size_t j = 0; /* listed already (its first cell comes earlier in the plan)? */
        while (j < i && strcmp(plan->cells[j].sweep, sweep) != 0)
            j++;
        if (j < i)
            continue;
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s=%lld", used ? "," : "",
                                 sweep, (long long)tkp_results_rows(r, sweep));
    }
    h5_set_attr_str(g, "first_rows", buf);
    write_ablations(g, plan);
    if (forced) { /* the config this run used, beside the first run's /config */
        for (size_t i = 0; i < plan->n_files; i++) {
            char link[256];
            tkp_results_config_link(plan->files[i].name, link, sizeof link);
            h5_write_text(g, link, plan->files[i].text);
        }
    }
    H5Gclose(g);
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
        return -1; /* the caller stops the run (tkp_results_fail) */
    return n;
}

/* The store's writes hold signals (interrupt.h): a stop mid-write would tear the file. */
int tkp_run_record_begin(struct tkp_results *r, const struct tkp_plan *plan,
                         const struct tkp_run_identity *id, enum tkp_backend backend, int fresh,
                         int forced, int argc, char **argv)
{
    tkp_interrupt_hold();
    const int rc = record_begin(r, plan, id, backend, fresh, forced, argc, argv);
    tkp_interrupt_release();
    return rc;
}

static void record_end(struct tkp_results *r, int n)
{
    if (n < 0)
        return;
    const hid_t file = (hid_t)tkp_results_handle(r);
    char path[64], now[64];
    snprintf(path, sizeof path, "/runs/%d", n);
    if (!h5_exists(file, path))
        return;
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    tkp_utc_now(now, sizeof now);
    h5_set_attr_str(g, "end_time", now);
    H5Gclose(g);
}

void tkp_run_record_end(struct tkp_results *r, int n)
{
    tkp_interrupt_hold();
    record_end(r, n);
    tkp_interrupt_release();
}
