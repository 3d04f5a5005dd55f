/* test_hostile_procs.c — hostile files and interruptions against the processes that read and
 * write (docs/ROBUSTNESS.md, "Readers inside the process", "Outputs that destroy", "Signals"):
 * damaged shards under `merge`, temporaries that are inputs or someone else's files, outputs a
 * running sweep holds, and SIGTERM at named pause points (TKP_PAUSE_AT, interrupt.h) of
 * `merge`, `apply`, `gen` and a `--workers` run. Randomized cases print their seed. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "test.h"

static char out[1 << 16];

/* Twelve cells in three shards (fast on the CPU). */
static const char *shard_config(void)
{
    return write_scratch("procs-shards.lua",
                         "sweep \"a\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 400,\n"
                         "  batch = { 1, 2, 3 }, k = 5, p = { 0.5, 1.0 },\n"
                         "  timing = { min_reps = 2, max_reps = 2 } }\n");
}

/* Shard i of 3 of shard_config() into scratch/procs-s<i>.h5 (made once per process). */
static const char *shard_file(int i)
{
    static char path[3][512];
    if (!path[i][0]) {
        char p[512];
        snprintf(p, sizeof p, "procs-s%d", i);
        if (run_into(shard_config(), p, i == 0 ? "--shard 0/3" : i == 1 ? "--shard 1/3"
                                                                         : "--shard 2/3",
                     path[i], sizeof path[i]) != 0)
            path[i][0] = 0;
    }
    return path[i][0] ? path[i] : NULL;
}

/* Does any file named `prefix`* exist in the scratch folder (a temporary left behind)? */
static int leftover(const char *prefix)
{
    DIR *d = opendir(scratch_dir());
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return found;
}

/* A shard with bytes flipped or cut (seeded, printed) under `merge`: exit 0 or 1 naming a
 * file, never a signal or a hang; the shards are left byte for byte, and a failed merge leaves
 * no output and no temporary. */
TEST(procs_merge_of_damaged_shards_never_crashes)
{
    const char *s[3] = { shard_file(0), shard_file(1), shard_file(2) };
    REQUIRE(s[0] && s[1] && s[2], "cannot make the shards");
    char bad[512], merged[512];
    snprintf(bad, sizeof bad, "%s/procs-bad.h5", scratch_dir());
    snprintf(merged, sizeof merged, "%s/procs-merged.h5", scratch_dir());
    size_t n[3];
    char *good[3];
    for (int i = 0; i < 3; i++)
        good[i] = slurp(s[i], &n[i]);
    REQUIRE(good[0] && good[1] && good[2], "cannot read the shards");
    const unsigned seed = 20261205;
    srand(seed);
    char *copy = malloc(n[0] + n[1] + n[2]);
    for (int trial = 0; trial < 45; trial++) {
        const int which = trial % 3;
        size_t at;
        REQUIRE(write_corrupt_copy(bad, good[which], copy, n[which], trial / 3, &at) == 0,
                "cannot write %s", bad);
        const char *in[3] = { s[0], s[1], s[2] };
        in[which] = bad;
        unlink(merged);
        int rc = run_cmd(out, sizeof out, "{ timeout 60 %s merge %s %s %s %s; }", topkp_bin(),
                         merged, in[0], in[1], in[2]);
        CHECK(rc == 0 || (rc == 1 && (strstr(out, bad) || libhdf5_sanitizer_report(out))),
              "seed %u trial %d (shard %d %s at %zu): merge exited %d: %.600s", seed, trial,
              which, (trial / 3) % 3 == 0 ? "cut" : "flipped bytes from", at, rc, out);
        CHECK(rc == 0 || (access(merged, F_OK) != 0 && !leftover("procs-merged.h5.partial")),
              "seed %u trial %d: a failed merge left its output or temporary", seed, trial);
        for (int i = 0; i < 3; i++)
            CHECK(i == which || same_bytes(s[i], good[i], n[i]),
                  "seed %u trial %d: merge changed the shard %s", seed, trial, s[i]);
    }
    free(copy);
    for (int i = 0; i < 3; i++)
        free(good[i]);
}

/* A crash of the merging child is put on the shard that crashes libhdf5 read alone; a crash
 * no shard makes alone names every shard; a time limit (SIGALRM) reads no shard again.
 * TKP_PAUSE_SELF: the child sends itself the signal at the named place ("reading:FILE" when
 * it starts reading FILE, in the merge and in each shard's reading alone; "merge-writing" in
 * the merge only). */
TEST(procs_merge_crash_names_the_shard_that_crashes_alone)
{
    const char *s[3] = { shard_file(0), shard_file(1), shard_file(2) };
    REQUIRE(s[0] && s[1] && s[2], "cannot make the shards");
    char merged[512], at[600], named[600];
    snprintf(merged, sizeof merged, "%s/procs-crash.h5", scratch_dir());
    snprintf(at, sizeof at, "reading:%s", s[1]);
    snprintf(named, sizeof named, "%s: a corrupt file (HDF5 crashed", s[1]);
    const struct {
        const char *point;
        int sig;
    } runs[] = { { at, SIGSEGV }, { "merge-writing", SIGSEGV }, { "merge-writing", SIGALRM } };
    for (int i = 0; i < 3; i++) {
        unlink(merged);
        int rc = run_cmd(out, sizeof out, "{ TKP_PAUSE_AT=%s TKP_PAUSE_SELF=1 "
                         "TKP_PAUSE_SIGNAL=%d timeout 60 %s merge %s %s %s %s; }", runs[i].point,
                         runs[i].sig, topkp_bin(), merged, s[0], s[2], s[1]);
        if (i == 0)
            CHECK(rc == 1 && strstr(out, named) && !strstr(out, "read alone"),
                  "a crash reading %s alone: merge exited %d: %.600s", s[1], rc, out);
        else if (i == 1)
            CHECK(rc == 1 && strstr(out, "no shard crashes it read alone") && strstr(out, s[0]) &&
                  strstr(out, s[1]) && strstr(out, s[2]),
                  "a crash of the merge only: merge exited %d without naming every shard: %.600s",
                  rc, out);
        else
            CHECK(rc == 1 && strstr(out, "did not finish within") && !strstr(out, "read alone"),
                  "a time limit: merge exited %d: %.600s", rc, out);
        CHECK(access(merged, F_OK) != 0, "a failed merge left its output: %.300s", out);
    }
}

/* SIGTERM to a run whose results file is created but holds no row yet (TKP_PAUSE_AT=
 * results-created) removes the file: nothing was in it, and a file stopped half written
 * could not be resumed; the same command with --resume then runs every cell. After a row
 * (cell-done) the file stays and resumes (docs/ROBUSTNESS.md, "Signals"). */
TEST(procs_sigterm_before_the_first_row_leaves_no_results_file)
{
    char o[512];
    snprintf(o, sizeof o, "%s/procs-early.h5", scratch_dir());
    const char *cfg = shard_config();
    for (int late = 0; late < 2; late++) {
        unlink(o);
        int rc = run_cmd(out, sizeof out, "{ TKP_PAUSE_AT=%s timeout 60 %s run %s -o %s; }",
                         late ? "cell-done" : "results-created", topkp_bin(), cfg, o);
        CHECK(rc != 0, "the run was not stopped (%s): %.300s", late ? "cell-done" : "created", out);
        CHECK(late ? access(o, F_OK) == 0 : access(o, F_OK) != 0,
              "stopped %s: the results file %s", late ? "after a row" : "before any row",
              late ? "is gone" : "is left");
        rc = run_cmd(out, sizeof out, "%s run %s -o %s --resume", topkp_bin(), cfg, o);
        CHECK(rc == 0 && strstr(out, late ? "already done" : "12 cells run"),
              "the resume after a stop (%s) exited %d: %.600s", late ? "cell-done" : "created",
              rc, out);
    }
}

/* A SIGTERM while a row is being written (TKP_PAUSE_AT=row-writing: its samples flushed, the
 * row not yet) acts once the row is on disk: the file keeps the row and resumes with the rest.
 * Acting at once would stop HDF5 wherever it is, inside a flush or a close (docs/ROBUSTNESS.md,
 * "Signals"). */
TEST(procs_sigterm_while_writing_a_row_keeps_the_row)
{
    char o[512];
    snprintf(o, sizeof o, "%s/procs-row.h5", scratch_dir());
    unlink(o);
    const char *cfg = shard_config();
    int rc = run_cmd(out, sizeof out, "{ TKP_PAUSE_AT=row-writing timeout 60 %s run %s -o %s; }",
                     topkp_bin(), cfg, o);
    CHECK(rc != 0 && strstr(out, "pause point row-writing"), "the run was not stopped: %.300s",
          out);
    rc = run_cmd(out, sizeof out, "%s run %s -o %s --resume", topkp_bin(), cfg, o);
    CHECK(rc == 0 && strstr(out, "1 cell was already done") && strstr(out, "11 cells run"),
          "the resume after a stop while writing row 1 exited %d: %.600s", rc, out);
}

/* `timeout` at random moments (seeded, printed) of runs that resume one file: every stop
 * leaves no file or one that holds a row, and the last resume ends with every cell once. */
TEST(procs_timeouts_at_random_moments_leave_a_file_that_resumes)
{
    char o[512];
    snprintf(o, sizeof o, "%s/procs-timeouts.h5", scratch_dir());
    const char *cfg = shard_config();
    const unsigned seed = 20261206;
    srand(seed);
    for (int round = 0; round < 4; round++) {
        unlink(o);
        for (int stop = 0; stop < 6; stop++) {
            const double after = 0.02 + 0.3 * rand() / RAND_MAX;
            run_cmd(out, sizeof out, "timeout %.3f %s run %s -o %s --resume", after,
                    topkp_bin(), cfg, o);
            if (access(o, F_OK) != 0)
                continue;
            run_cmd(out, sizeof out, "%s export %s | tail -n +2 | wc -l", topkp_bin(), o);
            CHECK(atoi(out) > 0, "seed %u: a stop after %.3f s left %s without a row: %.300s",
                  seed, after, o, out);
        }
        int rc = run_cmd(out, sizeof out, "%s run %s -o %s --resume", topkp_bin(), cfg, o);
        CHECK(rc == 0, "seed %u: the last resume exited %d: %.600s", seed, rc, out);
        run_cmd(out, sizeof out, "%s export %s | tail -n +2 | wc -l", topkp_bin(), o);
        CHECK(atoi(out) == 12, "seed %u: %d rows after the resumes, want the 12 cells once",
              seed, atoi(out));
    }
}

/* The temporary is never an input nor a file that was there: with OUT.partial a shard (and
 * OUT.partial.1 someone's file), merge OUT OUT.partial ... leaves both byte for byte, whether
 * the merge succeeds or fails (a missing shard). */
TEST(procs_merge_temporary_is_never_an_input)
{
    const char *s[3] = { shard_file(0), shard_file(1), shard_file(2) };
    REQUIRE(s[0] && s[1] && s[2], "cannot make the shards");
    char merged[512], partial[600], other[600];
    snprintf(merged, sizeof merged, "%s/procs-tmp.h5", scratch_dir());
    snprintf(partial, sizeof partial, "%s.partial", merged);
    snprintf(other, sizeof other, "%s.partial.1", merged);
    size_t n;
    char *shard = slurp(s[0], &n);
    REQUIRE(shard && write_file(partial, shard, n) == 0 && write_file(other, "mine", 4) == 0,
            "cannot write %s", partial);
    for (int ok = 0; ok < 2; ok++) {
        unlink(merged);
        int rc = run_cmd(out, sizeof out, "%s merge %s %s %s %s", topkp_bin(), merged, partial,
                         ok ? s[1] : s[2], ok ? s[2] : s[2]);
        CHECK(ok ? rc == 0 : rc == 1, "merge (%s) exited %d: %s", ok ? "whole" : "a shard twice",
              rc, out);
        CHECK(same_bytes(partial, shard, n), "merge changed or removed its input %s: %s",
              partial, out);
        CHECK(same_bytes(other, "mine", 4), "merge changed or removed %s: %s", other, out);
    }
    free(shard);
}

/* Start `cmd` in the background (its output into log); its pid, or -1. */
static long start_bg(const char *log, const char *cmd)
{
    char o[256];
    if (run_cmd(o, sizeof o, "%s >%s 2>&1 </dev/null & echo $!", cmd, log) != 0)
        return -1;
    return atol(o);
}

/* Process pid's state letter in /proc/<pid>/stat (after its name's closing parenthesis), '?'
 * when the line cannot be read so, 0 when the process is gone. */
static char proc_state(long pid)
{
    char path[64], st[512] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t got = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[got] = 0;
    const char *close_paren = strrchr(st, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] ? close_paren[2] : '?';
}

/* Wait (bounded, 60 s) until process pid is stopped (state T in /proc); 1 when it is. */
static int wait_stopped(long pid)
{
    for (int i = 0; i < 6000; i++) {
        const char state = proc_state(pid);
        if (!state)
            return 0;
        if (state == 'T')
            return 1;
        usleep(10000);
    }
    return 0;
}

/* A CPU run of shard_config() into `dst` (its log in `log`), started in the background with
 * TKP_PAUSE_AT=cell-done and SIGSTOP, so that it stops at its first cell (wait_stopped); its
 * pid, as start_bg's. */
static long start_run_stopping_at_first_cell(const char *dst, const char *log)
{
    char cmd[2048];
    unlink(dst);
    snprintf(cmd, sizeof cmd, "TKP_PAUSE_AT=cell-done TKP_PAUSE_SIGNAL=%d %s run %s -o %s "
             "--backend cpu", SIGSTOP, topkp_bin(), shard_config(), dst);
    return start_bg(log, cmd);
}

/* `merge --force` onto a file that a running sweep holds (stopped at its first cell by
 * TKP_PAUSE_AT=cell-done with SIGSTOP) is refused as in use, and the sweep's file is left as
 * it was; so is `apply`, `gen` and `export -o` with --force onto it. */
TEST(procs_outputs_a_running_sweep_holds_are_refused)
{
    const char *s[3] = { shard_file(0), shard_file(1), shard_file(2) };
    REQUIRE(s[0] && s[1] && s[2], "cannot make the shards");
    char held[512], log[512], logits[512];
    snprintf(held, sizeof held, "%s/procs-held.h5", scratch_dir());
    snprintf(log, sizeof log, "%s/procs-held.log", scratch_dir());
    snprintf(logits, sizeof logits, "%s/procs-held-logits.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", topkp_bin(),
                    logits) == 0, "gen: %s", out);
    const long pid = start_run_stopping_at_first_cell(held, log);
    REQUIRE(pid > 0 && wait_stopped(pid), "the run did not stop at its first cell (pid %ld)",
            pid);
    size_t n;
    char *before = slurp(held, &n);
    const char *writes[4] = { "merge", "apply", "gen", "export -o" };
    for (int w = 0; w < 4; w++) {
        int rc = w == 0 ? run_cmd(out, sizeof out, "%s merge %s %s %s %s --force", topkp_bin(),
                                  held, s[0], s[1], s[2])
                 : w == 1 ? run_cmd(out, sizeof out, "%s apply naive_sort --k 3 --in %s --out "
                                    "%s --force", topkp_bin(), logits, held)
                 : w == 2 ? run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s "
                                    "--force", topkp_bin(), held)
                          : run_cmd(out, sizeof out, "%s export %s -o %s --force", topkp_bin(),
                                    s[0], held);
        CHECK(rc == 1 && strstr(out, held) && strstr(out, "in use"),
              "%s --force onto a running sweep's file: want exit 1 'in use', got %d: %s",
              writes[w], rc, out);
        CHECK(before && same_bytes(held, before, n), "%s changed the running sweep's file",
              writes[w]);
    }
    kill((pid_t)pid, SIGKILL);
    kill((pid_t)pid, SIGCONT);
    free(before);
}

/* SIGTERM at the pause point of each writer (merge between sweeps in its guarded child,
 * apply, gen and export -o once their temporary is written): the writer ends by the signal (exit
 * 143 through timeout), the output is not there or, written with --force over an earlier one,
 * is that earlier one byte for byte, and no temporary is left. */
TEST(procs_sigterm_leaves_no_half_written_output)
{
    const char *s[3] = { shard_file(0), shard_file(1), shard_file(2) };
    REQUIRE(s[0] && s[1] && s[2], "cannot make the shards");
    char logits[512], dst[512];
    snprintf(logits, sizeof logits, "%s/procs-sig-logits.h5", scratch_dir());
    snprintf(dst, sizeof dst, "%s/procs-sig-out.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", topkp_bin(),
                    logits) == 0, "gen: %s", out);
    const char *names[4] = { "merge", "apply", "gen", "export -o" };
    for (int w = 0; w < 4; w++)
        for (int over = 0; over < 2; over++) {
            unlink(dst);
            REQUIRE(!over || write_file(dst, "earlier", 7) == 0, "cannot write %s", dst);
            const char *env = w ? "TKP_PAUSE_AT=output-written" : "TKP_PAUSE_AT=merge-writing";
            const char *force = over ? "--force" : "";
            int rc = w == 0 ? run_cmd(out, sizeof out, "{ %s timeout 60 %s merge %s %s %s %s %s; }",
                                      env, topkp_bin(), dst, s[0], s[1], s[2], force)
                     : w == 1 ? run_cmd(out, sizeof out, "{ %s timeout 60 %s apply naive_sort "
                                        "--k 3 --in %s --out %s %s; }", env, topkp_bin(), logits,
                                        dst, force)
                     : w == 2 ? run_cmd(out, sizeof out, "{ %s timeout 60 %s gen gaussian "
                                        "--batch 2 --vocab 50 -o %s %s; }", env, topkp_bin(), dst,
                                        force)
                              : run_cmd(out, sizeof out, "{ %s timeout 60 %s export %s -o %s %s; }",
                                        env, topkp_bin(), s[0], dst, force);
            CHECK(rc == 128 + SIGTERM && strstr(out, "pause point"),
                  "%s signalled at its pause point: want exit %d, got %d: %s", names[w],
                  128 + SIGTERM, rc, out);
            CHECK(over ? same_bytes(dst, "earlier", 7) : access(dst, F_OK) != 0,
                  "%s signalled: the output %s is %s", names[w], dst,
                  over ? "not the earlier one" : "there");
            CHECK(!leftover("procs-sig-out.h5.partial"), "%s signalled left its temporary",
                  names[w]);
        }
    for (int i = 0; i < 3; i++)
        CHECK(run_cmd(out, sizeof out, "%s info %s >/dev/null", topkp_bin(), s[i]) == 0,
              "a shard is unreadable after the signalled merge: %s", out);
}

/* A sweep over enough cells that two workers are mid-run at their first report. */
static const char *workers_config(void)
{
    return write_scratch("procs-workers.lua",
                         "sweep \"w\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 20000,\n"
                         "  batch = { 1, 2, 3, 4, 5, 6, 7, 8 }, k = 5, p = { 0.5, 1.0 },\n"
                         "  timing = { min_reps = 5, max_reps = 5 } }\n");
}

/* SIGTERM to a --workers parent once a worker has reported a cell (TKP_PAUSE_AT=
 * worker-running) ends its workers and waits for them: an immediate --resume of the same
 * command finds no shard in use and finishes the merged file. */
TEST(procs_sigterm_to_workers_parent_releases_their_locks)
{
    char merged[512];
    snprintf(merged, sizeof merged, "%s/procs-workers.h5", scratch_dir());
    int rc = run_cmd(out, sizeof out, "{ TKP_PAUSE_AT=worker-running timeout 120 %s run %s -o "
                     "%s --workers 2; }", topkp_bin(), workers_config(), merged);
    CHECK(rc == 128 + SIGTERM && strstr(out, "pause point"),
          "the signalled parent: want exit %d, got %d: %s", 128 + SIGTERM, rc, out);
    CHECK(access(merged, F_OK) != 0, "the signalled parent wrote %s", merged);
    rc = run_cmd(out, sizeof out, "{ timeout 120 %s run %s -o %s --workers 2 --resume; }",
                 topkp_bin(), workers_config(), merged);
    CHECK(rc == 0 && !strstr(out, "in use") && access(merged, F_OK) == 0,
          "--resume right after the signal: exit %d: %s", rc, out);
}

/* A folder path of about 3600 bytes under the scratch folder that does not exist (each part
 * shorter than NAME_MAX, the whole shorter than PATH_MAX). */
static const char *long_missing_folder(void)
{
    static char path[4000];
    snprintf(path, sizeof path, "%s/missing", scratch_dir());
    while (strlen(path) < 3500) /* run_cmd formats commands into 4096 bytes */
        strcat(path, "/0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
                     "0123456789abcdefghijklmnopqrstuvwxyz");
    return path;
}

/* Every command given a file near the path limit in a folder that does not exist ends with an
 * error that keeps the file's name (its last part) and the reason, however long the path: the
 * message cuts the path in its middle, not the reason off (docs/ROBUSTNESS.md, "Messages cut
 * short"). */
TEST(procs_messages_near_the_path_limit_keep_their_reason)
{
    const char *dir = long_missing_folder(), *bin = topkp_bin();
    char logits[512], cmd[8][4400];
    snprintf(logits, sizeof logits, "%s/procs-long-logits.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 20 -o %s", bin, logits)
            == 0, "gen: %s", out);
    const char *s0 = shard_file(0), *s1 = shard_file(1);
    REQUIRE(s0 && s1, "cannot make the shards");
    snprintf(cmd[0], sizeof cmd[0], "%s gen gaussian --batch 2 --vocab 20 -o %s/x-out.h5", bin,
             dir);
    snprintf(cmd[1], sizeof cmd[1], "%s apply naive_sort --k 2 --in %s --out %s/x-out.h5", bin,
             logits, dir);
    snprintf(cmd[2], sizeof cmd[2], "%s merge %s/x-out.h5 %s %s", bin, dir, s0, s1);
    snprintf(cmd[3], sizeof cmd[3], "%s apply naive_sort --k 2 --in %s/x-in.h5 --out %s/o.h5",
             bin, dir, scratch_dir());
    snprintf(cmd[4], sizeof cmd[4], "%s export %s/x-in.h5", bin, dir);
    snprintf(cmd[5], sizeof cmd[5], "%s info %s/x-in.h5", bin, dir);
    snprintf(cmd[6], sizeof cmd[6], "%s compare %s/x-in.h5 %s", bin, dir, s0);
    snprintf(cmd[7], sizeof cmd[7], "%s merge %s/o.h5 %s/x-in.h5 %s", bin, scratch_dir(), dir,
             s1);
    for (int c = 0; c < 8; c++) {
        const char *name = c < 3 ? "x-out.h5" : "x-in.h5";
        const int rc = run_cmd(out, sizeof out, "%s", cmd[c]);
        CHECK(rc == 1 && strstr(out, name) &&
                  (strstr(out, "does not exist") || strstr(out, "No such file")),
              "command %d (%.40s...): want exit 1, '%s' and the reason, got %d: %s", c, cmd[c],
              name, rc, out);
    }
}

/* An output that is an input by identity — a hard link or a symbolic link to it — is refused
 * even with --force, and the input is left byte for byte: merge (a shard), apply (its logits
 * file) and export -o (its results file). */
TEST(procs_outputs_that_are_an_input_are_refused_by_identity)
{
    const char *s[3] = { shard_file(0), shard_file(1), shard_file(2) };
    REQUIRE(s[0] && s[1] && s[2], "cannot make the shards");
    char logits[512], alias[2][512];
    snprintf(logits, sizeof logits, "%s/procs-id-logits.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", topkp_bin(),
                    logits) == 0, "gen: %s", out);
    for (int w = 0; w < 3; w++)
        for (int hard = 0; hard < 2; hard++) {
            const char *in = w == 1 ? logits : s[0];
            snprintf(alias[hard], sizeof alias[hard], "%s/procs-id-%d-%d.h5", scratch_dir(), w,
                     hard);
            unlink(alias[hard]);
            REQUIRE((hard ? link(in, alias[hard]) : symlink(in, alias[hard])) == 0,
                    "cannot link %s", alias[hard]);
            size_t n;
            char *before = slurp(in, &n);
            int rc = w == 0 ? run_cmd(out, sizeof out, "%s merge %s %s %s %s --force",
                                      topkp_bin(), alias[hard], s[0], s[1], s[2])
                     : w == 1 ? run_cmd(out, sizeof out, "%s apply naive_sort --k 3 --in %s "
                                        "--out %s --force", topkp_bin(), in, alias[hard])
                              : run_cmd(out, sizeof out, "%s export %s -o %s --force",
                                        topkp_bin(), in, alias[hard]);
            CHECK(rc == 1 && strstr(out, "is the input file"),
                  "%s onto a %s link to its input: want exit 1 'is the input file', got %d: %s",
                  w == 0 ? "merge" : w == 1 ? "apply" : "export -o", hard ? "hard" : "symbolic",
                  rc, out);
            CHECK(before && same_bytes(in, before, n), "the input %s changed", in);
            free(before);
        }
}

/* Is process pid gone or a zombie? */
static int ended(long pid)
{
    const char state = proc_state(pid);
    return !state || state == 'Z';
}

/* A pause point fires once a process (docs/ROBUSTNESS.md, "Signals"): a run stopped by SIGSTOP
 * at its first cell and continued runs on to its end without stopping at the next of its
 * twelve cells. (A --workers parent stopped again at worker-running right after its SIGCONT,
 * before the SIGTERM meant to end it arrived, stayed stopped: a stopped process holds a
 * SIGTERM until the next SIGCONT.) */
TEST(procs_a_pause_point_fires_once)
{
    char dst[512], log[512];
    snprintf(dst, sizeof dst, "%s/procs-once.h5", scratch_dir());
    snprintf(log, sizeof log, "%s/procs-once.log", scratch_dir());
    const long pid = start_run_stopping_at_first_cell(dst, log);
    REQUIRE(pid > 0 && wait_stopped(pid), "the run did not stop at its first cell (pid %ld)",
            pid);
    kill((pid_t)pid, SIGCONT);
    usleep(20000);
    char state = proc_state(pid);
    for (int i = 0; i < 6000 && state && state != 'Z' && state != 'T'; i++, usleep(10000))
        state = proc_state(pid);
    CHECK(!state || state == 'Z', "the continued run %s (state %c; log %s)",
          state == 'T' ? "stopped again at a later cell" : "did not end within 60 s", state,
          log);
    kill((pid_t)pid, SIGKILL);
    kill((pid_t)pid, SIGCONT);
    CHECK(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), dst) == 0 &&
              strstr(out, "rtopk") && strstr(out, "naive_sort"),
          "the continued run's results do not read back with both algorithms: %s", out);
}

/* A SIGTERM and its repeat (what `timeout` sends: to the command, then to its process group)
 * end a --workers parent whose workers are stopped (SIGSTOP here, so that SIGTERM alone never
 * ends them): the parent is stopped at worker-running, its workers stopped, then the two
 * SIGTERMs. The cleaning is bounded (SIGCONT, then SIGKILL after TKP_CHILD_GRACE_SECONDS):
 * parent and workers are all gone within 15 s, no worker left holding its lock. (That the
 * repeat does not cut the cleaning short: procs_timeouts_at_random_moments_...) */
TEST(procs_sigterm_ends_a_workers_parent_and_its_stopped_workers)
{
    char merged[512], log[512], cmd[2048], kids[4096];
    snprintf(merged, sizeof merged, "%s/procs-second.h5", scratch_dir());
    snprintf(log, sizeof log, "%s/procs-second.log", scratch_dir());
    snprintf(cmd, sizeof cmd, "TKP_PAUSE_AT=worker-running TKP_PAUSE_SIGNAL=%d %s run %s -o %s "
             "--workers 2", SIGSTOP, topkp_bin(), workers_config(), merged);
    const long pid = start_bg(log, cmd);
    REQUIRE(pid > 0 && wait_stopped(pid), "the parent did not stop at worker-running");
    run_cmd(kids, sizeof kids, "cat /proc/%ld/task/%ld/children", pid, pid);
    for (char *k = kids; *k;) {
        char *end;
        const long c = strtol(k, &end, 10);
        if (end == k)
            break;
        kill((pid_t)c, SIGSTOP);
        k = end;
    }
    kill((pid_t)pid, SIGCONT);
    kill((pid_t)pid, SIGTERM);
    usleep(2000);
    kill((pid_t)pid, SIGTERM);
    int gone = 0;
    for (int i = 0; i < 1500 && !gone; i++, usleep(10000))
        gone = ended(pid);
    CHECK(gone, "two SIGTERMs did not end the parent within 15 s (workers: %s)", kids);
    for (char *k = kids; *k;) {
        char *end;
        const long c = strtol(k, &end, 10);
        if (end == k)
            break;
        CHECK(ended(c), "worker %ld outlived its parent's SIGTERM (state %c)", c, proc_state(c));
        kill((pid_t)c, SIGKILL);
        kill((pid_t)c, SIGCONT);
        k = end;
    }
    kill((pid_t)pid, SIGKILL);
}
