/* provenance.h — what a results file records about where and how it was made. */
#ifndef TKP_PROVENANCE_H
#define TKP_PROVENANCE_H

#include "results.h"

#define TKP_VERSION "0.1.0"

/* Write the root attributes of a new run: version, git commit, host, backend, device,
 * start time, command line, measured copy bandwidth. */
void tkp_provenance_write(struct tkp_results *r, enum tkp_backend backend, int argc,
                          char **argv, double copy_gbps);
/* The UTC time now, ISO 8601. */
void tkp_utc_now(char *buf, size_t n);
/* The command line, its words joined by spaces (cut at n - 1 bytes). */
void tkp_command_line(int argc, char **argv, char *buf, size_t n);
/* The device's measured copy bandwidth in GB/s (host memcpy on the CPU backend). */
double tkp_measure_copy_gbps(enum tkp_backend backend);
/* A short device name for figure labels. */
void tkp_device_name(enum tkp_backend backend, char *buf, size_t n);

#endif
