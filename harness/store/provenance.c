/* provenance.c — see provenance.h. The git commit is baked in at build time (the Makefile
 * writes build/version.h); a dirty tree is marked "+dirty". */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "provenance.h"
#include "timing.h"
#include "version.h"
#include "interrupt.h"

void tkp_utc_now(char *buf, size_t n)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void tkp_command_line(int argc, char **argv, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " " : "", argv[i]);
}

void tkp_device_name(enum tkp_backend backend, char *buf, size_t n)
{
    struct tkp_gpu_props props;
    struct tkp_error err;
    if (backend == TKP_GPU && tkp_gpu_props(&props, &err) == TKP_OK) {
        snprintf(buf, n, "%s", props.name);
        return;
    }
    snprintf(buf, n, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 2;
            colon[strcspn(colon, "\n")] = 0;
            snprintf(buf, n, "%s", colon);
            break;
        }
    }
    fclose(f);
}

double tkp_measure_copy_gbps(enum tkp_backend backend)
{
    struct tkp_error err;
    if (backend == TKP_GPU)
        return tkp_gpu_copy_gbps(&err);
    const size_t bytes = (size_t)64 << 20;
    char *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 1e30;
    for (int i = 0; i < 5; i++) {
        double t0 = tkp_now_us();
        memcpy(b, a, bytes);
        double dt = tkp_now_us() - t0;
        if (dt < best)
            best = dt;
        a[i] = b[bytes - 1 - (size_t)i]; /* keep the copies observable */
    }
    free(a);
    free(b);
    return 2.0 * (double)bytes / (best * 1e3); /* read + write, bytes per ns = GB/s */
}

static void write_provenance(struct tkp_results *r, enum tkp_backend backend, int argc,
                             char **argv, double copy_gbps)
{
    char buf[4096];
    tkp_results_attr(r, "tool_version", TKP_VERSION);
    tkp_results_attr(r, "git_commit", TKP_GIT_COMMIT);
    gethostname(buf, sizeof buf);
    tkp_results_attr(r, "host", buf);
    tkp_results_attr(r, "backend", backend == TKP_GPU ? "gpu" : "cpu");
    tkp_device_name(backend, buf, sizeof buf);
    tkp_results_attr(r, "device_name", buf);
    struct tkp_gpu_props props = { .sm_count = 0 };
    struct tkp_error err;
    if (backend == TKP_GPU)
        tkp_gpu_props(&props, &err);
    tkp_results_attr_num(r, "sm_count", props.sm_count);
    tkp_results_attr_num(r, "l2_bytes", (double)props.l2_bytes);
    tkp_results_attr_num(r, "max_sm_clock_mhz", props.max_sm_clock_mhz);
    snprintf(buf, sizeof buf, "%d", props.driver_version);
    tkp_results_attr(r, "driver_version", backend == TKP_GPU ? buf : "");
    snprintf(buf, sizeof buf, "%d", props.runtime_version);
    tkp_results_attr(r, "cuda_version", backend == TKP_GPU ? buf : "");
    tkp_results_attr_num(r, "cpu_cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    tkp_results_attr_num(r, "copy_gbps", copy_gbps);
    tkp_utc_now(buf, sizeof buf);
    tkp_results_attr(r, "start_time", buf);
    tkp_command_line(argc, argv, buf, sizeof buf);
    tkp_results_attr(r, "command_line", buf);
}

/* The store's writes hold signals (interrupt.h): a stop mid-write would tear the file. */
void tkp_provenance_write(struct tkp_results *r, enum tkp_backend backend, int argc,
                          char **argv, double copy_gbps)
{
    tkp_interrupt_hold();
    write_provenance(r, backend, argc, argv, copy_gbps);
    tkp_interrupt_release();
}
