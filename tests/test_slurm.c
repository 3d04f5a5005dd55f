/* test_slurm.c — the Slurm recipe of docs/CLUSTERS.md ("Sweeps on a Slurm cluster") on a real
 * one-node cluster: scripts/slurm/local-cluster.sh starts munged, slurmctld and slurmd in the
 * scratch folder, scripts/slurm/submit.sh submits a small CPU sweep as a 3-task job array and
 * its merge job, and the merged file must hold what one process running the whole config
 * writes (export's rows but the timing columns, in order), made by three shard runs. The
 * cluster is stopped whatever happens. Skipped where slurmctld or sbatch is not installed
 * (CI installs them: `make test-deps`). And everywhere: submit.sh's refusals (a missing
 * config, a bad N, no sbatch, bad topkp arguments, an OUTDIR already merged) queue nothing,
 * and what it hands to sbatch, seen through a stand-in sbatch; the two job scripts started by
 * hand as Slurm would (three array tasks, one again as if requeued, then the merge) make the
 * single run too, and sweep.sbatch refuses an array that is not 0..N-1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "test.h"

#define SHARDS 3
#define WAIT_SECONDS 180

static char out[1 << 16];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* What the queue, the jobs and their logs say, for a failure. */
static void dump_jobs(const char *outdir)
{
    run_cmd(out, sizeof out, "squeue; scontrol show job; tail -n 20 %s/logs/*.log", outdir);
    fprintf(stderr, "%s\n", out);
}

/* The job's state(s), one word a task, into st; returns 0, or -1 when scontrol fails. */
static int job_states(const char *job, char *st, size_t n)
{
    return run_cmd(st, n, "scontrol -o show job %s | grep -o 'JobState=[A-Z_]*'", job) ? -1 : 0;
}

/* Waits until the merge job leaves the queue's live states; returns its final state line. */
static const char *wait_for(const char *merge, double limit)
{
    static char st[256];
    for (const double t0 = now(); now() - t0 < limit;) {
        if (job_states(merge, st, sizeof st) == 0 && !strstr(st, "PENDING") &&
            !strstr(st, "RUNNING") && !strstr(st, "CONFIGURING") && !strstr(st, "COMPLETING"))
            return st;
        nanosleep(&(struct timespec){ .tv_nsec = 500000000 }, NULL);
    }
    return NULL;
}

/* The value after `key=` in text, up to the end of its line. */
static int field(const char *text, const char *key, char *val, size_t n)
{
    const char *at = strstr(text, key);
    if (!at)
        return -1;
    at += strlen(key);
    snprintf(val, n, "%.*s", (int)strcspn(at, "\n"), at);
    return 0;
}

/* A sweep of 24 cells, 8 of them unsupported (rtopk with top-p), in well under a second. */
static const char *sweep_config(void)
{
    return write_scratch(
        "slurm.lua",
        "sweep \"s1\" { algos = { \"naive_sort\", \"rtopk\", { \"qrita\", search = \"binary\" } },\n"
        "  vocab = { 300, 1000 }, batch = { 1, 3 }, k = 7, p = { 0.9, 1.0 },\n"
        "  timing = { warmup = 0, min_reps = 2, max_reps = 2 } }\n");
}

/* One process running all of cfg into scratch/single.h5; returns its path. */
static const char *run_single(const char *cfg)
{
    static char path[512];
    CHECK(run_into(cfg, "single", "", path, sizeof path) == 0, "the single-process run failed");
    return path;
}

/* outdir/merged.h5 holds the rows of `single` but the timing columns, in the same order, and
 * records the SHARDS shard runs it was made from. */
static void check_merged(const char *outdir, const char *single)
{
    static char merged_rows[1 << 18], single_rows[1 << 18];
    char path[512];
    const int want = export_without(single, timing_columns, single_rows, sizeof single_rows);
    snprintf(path, sizeof path, "%s/merged.h5", outdir);
    const int got = export_without(path, timing_columns, merged_rows, sizeof merged_rows);
    REQUIRE(want > 0 && got >= 0, "export: single %d rows, merged %d:\n%s", want, got,
            merged_rows);
    CHECK(got == want && strcmp(merged_rows, single_rows) == 0,
          "merged (%d rows) differs from the single run (%d rows):\n--- merged\n%s--- single\n%s",
          got, want, merged_rows, single_rows);
    const int rc = run_cmd(out, sizeof out, "%s info %s", topkp_bin(), path);
    CHECK(rc == 0 && strstr(out, "merged_shards\t3\n") && strstr(out, "shard\t0/3\n") &&
              strstr(out, "shard\t1/3\n") && strstr(out, "shard\t2/3\n"),
          "the merged file does not record shards 0..2 of 3:\n%s", out);
}

static void sweep_and_check(const char *cfg, const char *outdir)
{
    char sweep_job[32], merge_job[32];
    const double t0 = now();
    int rc = run_cmd(out, sizeof out, "scripts/slurm/submit.sh %s %d %s --backend cpu", cfg,
                     SHARDS, outdir);
    REQUIRE(rc == 0 && field(out, "sweep_job=", sweep_job, sizeof sweep_job) == 0 &&
                field(out, "merge_job=", merge_job, sizeof merge_job) == 0,
            "submit.sh failed (%d):\n%s", rc, out);
    const char *single = run_single(cfg), *state = wait_for(merge_job, WAIT_SECONDS);
    if (!state || !strstr(state, "COMPLETED"))
        dump_jobs(outdir);
    REQUIRE(state, "merge job %s not done after %d s", merge_job, WAIT_SECONDS);
    REQUIRE(strcmp(state, "JobState=COMPLETED\n") == 0, "merge job %s ended %s", merge_job, state);
    char tasks[256];
    CHECK(job_states(sweep_job, tasks, sizeof tasks) == 0 &&
              strcmp(tasks, "JobState=COMPLETED\nJobState=COMPLETED\nJobState=COMPLETED\n") == 0,
          "array %s: want %d tasks COMPLETED, got:\n%s", sweep_job, SHARDS, tasks);
    fprintf(stderr, "  slurm: array %s and merge %s done in %.1f s\n", sweep_job, merge_job,
            now() - t0);
    check_merged(outdir, single);
}

TEST(slurm_array_sweep_equals_single_run)
{
    if (run_cmd(NULL, 0, "command -v slurmctld && command -v slurmd && command -v sbatch && "
                         "command -v munged") != 0) {
        test_skip("slurmctld/slurmd/sbatch/munged not installed (make test-deps installs them)");
        return;
    }
    char dir[256], conf[300], outdir[300];
    snprintf(dir, sizeof dir, "%s/slurm", scratch_dir());
    snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
    snprintf(outdir, sizeof outdir, "%s/sweep", scratch_dir());
    setenv("TKP_SLURM_DIR", dir, 1);
    setenv("SLURM_CONF", conf, 1);
    setenv("TKP_SLURM_MAX_SECONDS", "600", 1); /* the watchdog, should this process die */
    const char *cfg = sweep_config();
    const int rc = run_cmd(out, sizeof out, "scripts/slurm/local-cluster.sh start");
    CHECK(rc == 0, "local-cluster.sh start failed (%d):\n%s", rc, out);
    if (rc == 0)
        sweep_and_check(cfg, outdir);
    CHECK(run_cmd(out, sizeof out, "scripts/slurm/local-cluster.sh stop") == 0,
          "local-cluster.sh stop failed:\n%s", out);
    unsetenv("SLURM_CONF");
}

/* A stand-in sbatch in scratch/fakebin that appends its arguments to scratch/fakebin/calls
 * and answers job ids 101, 102, ... as `sbatch --parsable` does on a named cluster. */
static const char *fake_sbatch(void)
{
    static char bin[300];
    snprintf(bin, sizeof bin, "%s/fakebin", scratch_dir());
    run_cmd(NULL, 0, "mkdir -p %s && rm -f %s/calls && printf '%%s\\n' '#!/bin/sh' "
            "'echo \"$*\" >>%s/calls' 'echo \"$((100 + $(wc -l <%s/calls)));local\"' "
            ">%s/sbatch && chmod +x %s/sbatch", bin, bin, bin, bin, bin, bin);
    return bin;
}

/* submit.sh with `args` under PATH=`path`; its output in out, its status returned. */
static int submit(const char *path, const char *args)
{
    return run_cmd(out, sizeof out, "PATH=%s TOPKP=%s /bin/bash scripts/slurm/submit.sh %s", path,
                   topkp_bin(), args);
}

TEST(slurm_submit_checks_input_and_queues_array_then_merge)
{
    const char *bin = fake_sbatch(), *path = getenv("PATH");
    char fpath[4096], args[1024], calls[1024], outdir[300];
    snprintf(fpath, sizeof fpath, "%s:%s", bin, path ? path : "/usr/bin:/bin");
    snprintf(calls, sizeof calls, "%s/calls", bin);
    snprintf(outdir, sizeof outdir, "%s/submitted", scratch_dir());
    const char *cfg = write_scratch("submit.lua", "sweep \"s\" { algos = { \"naive_sort\" }, "
                                                  "vocab = { 300 }, batch = { 1, 2 } }\n");
    static const struct {
        const char *args, *says;
        int rc;
    } bad[] = {
        { "%s/nope.lua 3 %s", "no config file '", 1 },
        { "%s 0 %s", "N must be a whole number >= 1 (the number of shards), not '0'", 2 },
        { "%s -2 %s", "not '-2'", 2 },
        { "%s 3x %s", "not '3x'", 2 },
        { "%s 3 %s --bogus", "topkp refused the config or the arguments", 1 },
        { "%s 3 %s --sweep nosuch", "nothing was submitted", 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i].args, i == 0 ? scratch_dir() : cfg, outdir);
        const int rc = submit(fpath, args);
        CHECK(rc == bad[i].rc && strstr(out, bad[i].says), "submit.sh %s: status %d (want %d), "
              "output lacks \"%s\":\n%s", args, rc, bad[i].rc, bad[i].says, out);
    }
    snprintf(args, sizeof args, "%s 3 %s", cfg, outdir);
    CHECK(submit("/nonexistent", args) == 1 && strstr(out, "sbatch not found"),
          "without sbatch on the PATH:\n%s", out);
    CHECK(run_cmd(NULL, 0, "test -e %s || test -e %s", calls, outdir) != 0,
          "a refused submit.sh called sbatch or made %s", outdir);

    snprintf(args, sizeof args, "%s 3 %s --backend cpu", cfg, outdir);
    int rc = submit(fpath, args);
    CHECK(rc == 0 && strstr(out, "sweep_job=101\n") && strstr(out, "merge_job=102\n"),
          "submit.sh %s: status %d:\n%s", args, rc, out);
    char want[2048];
    snprintf(want, sizeof want, "grep -c -- '--array=0-2 --gres=none --output=%s/logs/shard-%%a.log "
             ".*/sweep.sbatch .*submit.lua %s --backend cpu$' %s && grep -c -- "
             "'--dependency=afterok:101 --kill-on-invalid-dep=yes --output=%s/logs/merge.log "
             ".*/merge.sbatch %s 3$' %s", outdir, outdir, calls, outdir, outdir, calls);
    rc = run_cmd(out, sizeof out, "%s", want);
    CHECK(rc == 0 && strcmp(out, "1\n1\n") == 0, "sbatch calls not as wanted (%s):\n%s", want, out);
    snprintf(args, sizeof args, "%s 3 %s", cfg, outdir);
    rc = submit(fpath, args);
    CHECK(rc == 0 && run_cmd(out, sizeof out, "grep -c -- '--gres=gpu:1' %s", calls) == 0,
          "without --backend cpu the array asks no GPU:\n%s", out);

    run_cmd(NULL, 0, "touch %s/merged.h5 && rm %s", outdir, calls);
    CHECK(submit(fpath, args) == 1 && strstr(out, "merged.h5' exists") &&
              run_cmd(NULL, 0, "test -e %s", calls) != 0,
          "an OUTDIR already merged was not refused, or sbatch was called:\n%s", out);
}

/* sweep.sbatch as Slurm would start array task `task` of 0..max (min its first index). */
static int array_task(const char *cfg, const char *outdir, int task, int min, int max)
{
    return run_cmd(out, sizeof out, "SLURM_ARRAY_TASK_ID=%d SLURM_ARRAY_TASK_MIN=%d "
                   "SLURM_ARRAY_TASK_MAX=%d SLURM_ARRAY_TASK_COUNT=%d SLURM_ARRAY_JOB_ID=7 "
                   "TOPKP=%s /bin/bash scripts/slurm/sweep.sbatch %s %s --backend cpu", task, min,
                   max, max - min + 1, topkp_bin(), cfg, outdir);
}

TEST(slurm_scripts_without_slurm_make_the_single_run)
{
    const char *cfg = sweep_config();
    char outdir[300];
    snprintf(outdir, sizeof outdir, "%s/by-hand", scratch_dir());
    run_cmd(NULL, 0, "rm -rf %s && mkdir -p %s", outdir, outdir);
    for (int i = 0; i < SHARDS; i++) {
        const int rc = array_task(cfg, outdir, i, 0, SHARDS - 1);
        REQUIRE(rc == 0 && strstr(out, "of 3 (job 7_"), "task %d of %d: status %d:\n%s", i, SHARDS,
                rc, out);
    }
    int rc = array_task(cfg, outdir, 1, 0, SHARDS - 1); /* a requeued task */
    CHECK(rc == 0 && strstr(out, "summary: 0 cells run"),
          "task 1 again did not resume its file (%d):\n%s", rc, out);
    rc = run_cmd(out, sizeof out, "TOPKP=%s /bin/bash scripts/slurm/merge.sbatch %s %d",
                 topkp_bin(), outdir, SHARDS);
    REQUIRE(rc == 0, "merge.sbatch: status %d:\n%s", rc, out);
    check_merged(outdir, run_single(cfg));

    rc = array_task(cfg, outdir, 1, 1, 2);
    CHECK(rc == 2 && strstr(out, "the array must be --array=0-(N-1); it is 1-2 with 2 tasks"),
          "an array 1-2 was not refused (%d):\n%s", rc, out);
    rc = run_cmd(out, sizeof out, "/bin/bash scripts/slurm/sweep.sbatch %s %s", cfg, outdir);
    CHECK(rc != 0 && strstr(out, "not an array task"), "outside an array (%d):\n%s", rc, out);
}
