/* test_reproduce.c — scripts/reproduce.sh (`make reproduce`, docs/CAMPAIGN.md) on a tiny chunk
 * table over a tiny config, on the CPU backend: --list-chunks lists the shipped table; two
 * chunks share one file (a list of algorithms and "*" for the rest) and campaign.tsv has a
 * line per chunk with the binary's commit and sha256, GPU-only and real-logits chunks recorded
 * `missing` with why; a chunk stopped by --budget records `missing` and the next call resumes it
 * into the same file without doubling a cell; with --workers a file's chunks are one sharded
 * run; a folder of another binary and a tree with uncommitted changes are refused, naming what
 * differs, unless the tree's content is the bundled binary's source (a copy with an older .git). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "test.h"

#define SCRIPT "scripts/reproduce.sh"

/* 24 cells, each warmed up for 0.1 s whatever the machine's speed: a chunk of 16 cells outlasts
 * a 1-second budget. */
static const char *const tiny_config =
    "sweep \"tiny\" {\n"
    "    algos = { \"naive_sort\", \"rtopk\", \"qrita\" }, dataset = \"gaussian\",\n"
    "    vocab = 4096, batch = { 1, 2, 3, 4 }, k = { 5, 50 }, p = 1.0, verify = 4,\n"
    "    timing = { warmup = 1, warmup_seconds = 0.1, min_reps = 1, max_reps = 1 },\n"
    "}\n";

/* The chunk table over scratch config `cfg`: rtopk alone, then the rest of the sweep, a GPU-only
 * chunk and one that needs the real-model logits. */
static const char *tiny_chunks(const char *cfg)
{
    static char text[1024];
    snprintf(text, sizeof text,
             "# chunk\tfile\tconfig\tsweeps\talgos\tgpu_s\tneeds\n"
             "first\ttiny.h5\t%s\ttiny\trtopk\t0\t-\n"
             "rest\ttiny.h5\t%s\ttiny\t*\t0\t-\n"
             "gpu_only\tgpu_tests.log\t-\t-\t-\t0\tgpu\n"
             "real_only\treal.h5\t%s\ttiny\t-\t0\treal\n", cfg, cfg, cfg);
    return write_scratch("chunks.tsv", text);
}

/* reproduce.sh with the tiny table into scratch folder `folder`, `args` added. */
static int reproduce(char *out, size_t n, const char *folder, const char *args)
{
    char cfg[600], chunks[600];
    snprintf(cfg, sizeof cfg, "%s", write_scratch("tiny.lua", tiny_config));
    snprintf(chunks, sizeof chunks, "%s", tiny_chunks(cfg));
    return run_cmd(out, n, "TOPKP=%s REAL_GLOB='%s/no-such-*.h5' bash " SCRIPT " --backend cpu "
                   "--no-paper --allow-dirty --chunks %s --out %s/%s %s", topkp_bin(),
                   scratch_dir(), chunks, scratch_dir(), folder, args);
}

/* The status of chunk `name` in folder's campaign.tsv into status ("" when no line). */
static void chunk_status(const char *folder, const char *name, char *status, size_t n)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "awk -F'\\t' '$10 == \"%s\" { print $9 }' %s/%s/campaign.tsv",
             name, scratch_dir(), folder);
    static char out[4096];
    run_cmd(out, sizeof out, "%s", cmd);
    out[strcspn(out, "\n")] = 0;
    snprintf(status, n, "%s", out);
}

/* Cells of the folder's tiny.h5, and distinct keys among them. */
static void count_cells(const char *folder, int *cells, int *keys)
{
    static char out[256];
    run_cmd(out, sizeof out, "%s export %s/%s/tiny.h5 | tail -n +2 | wc -l", topkp_bin(),
            scratch_dir(), folder);
    *cells = atoi(out);
    run_cmd(out, sizeof out, "%s export %s/%s/tiny.h5 | tail -n +2 | cut -f2 | sort -u | wc -l",
            topkp_bin(), scratch_dir(), folder);
    *keys = atoi(out);
}

TEST(reproduce_lists_the_shipped_chunks)
{
    static char out[8192];
    REQUIRE(run_cmd(out, sizeof out, "TOPKP=%s bash " SCRIPT " --list-chunks", topkp_bin()) == 0,
            "%s", out);
    static const char *const want[] = { "gpu_tests\tgpu_tests.log", "table4\ttable4.h5",
                                        "cake_seed\tcake.h5", "fig2_rest\tfig2.h5",
                                        "fig4\tfig4.h5", "exactness_16bit\texactness.h5" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(strstr(out, want[i]), "--list-chunks lacks \"%s\":\n%s", want[i], out);
    CHECK(strstr(out, " s estimated on one H200"), "no total estimate:\n%s", out);
}

TEST(reproduce_records_a_line_per_chunk_and_shares_a_file)
{
    static char out[1 << 14];
    REQUIRE(reproduce(out, sizeof out, "whole", "") == 0, "%s", out);
    char status[512];
    chunk_status("whole", "first", status, sizeof status);
    CHECK(strcmp(status, "ok") == 0, "chunk first: '%s'\n%s", status, out);
    chunk_status("whole", "rest", status, sizeof status);
    CHECK(strcmp(status, "ok") == 0, "chunk rest: '%s'\n%s", status, out);
    chunk_status("whole", "gpu_only", status, sizeof status);
    CHECK(strstr(status, "missing: GPU only"), "chunk gpu_only: '%s'", status);
    chunk_status("whole", "real_only", status, sizeof status);
    CHECK(strstr(status, "missing: no real-model logits") && strstr(status, "make real-logits"),
          "chunk real_only: '%s'", status);
    int cells, keys;
    count_cells("whole", &cells, &keys);
    CHECK(cells == 24 && keys == 24, "tiny.h5: %d cells, %d keys; want 24 of each", cells, keys);
    /* every line carries the binary's commit and sha256 */
    static char version[256], sha[256], lines[4096];
    run_cmd(version, sizeof version, "%s --version | sed 's/.*(commit \\(.*\\)).*/\\1/'", topkp_bin());
    run_cmd(sha, sizeof sha, "sha256sum %s | cut -d' ' -f1", topkp_bin());
    version[strcspn(version, "\n")] = 0;
    sha[strcspn(sha, "\n")] = 0;
    run_cmd(lines, sizeof lines, "awk -F'\\t' 'NR > 1 && ($3 != \"%s\" || $4 != \"%s\" || $6 != "
            "\"cpu\")' %s/whole/campaign.tsv; awk 'END { print NR }' %s/whole/campaign.tsv",
            version, sha, scratch_dir(), scratch_dir());
    CHECK(strcmp(lines, "5\n") == 0, "campaign.tsv: lines not of %s (%s), or not 1 + 4 lines:\n%s",
          version, sha, lines);
}

/* The last line names every chunk not ok, those the budget put off before they ran (no line in
 * campaign.tsv yet) too: "not ok: none" is the sign to stop calling. */
TEST(reproduce_names_the_chunks_a_budget_put_off)
{
    static char out[1 << 14];
    REQUIRE(reproduce(out, sizeof out, "put_off", "--budget 1") == 0, "%s", out);
    const char *summary = strstr(out, "chunks recorded; not ok: ");
    REQUIRE(summary, "no summary line:\n%s", out);
    static const char *const names[] = { "first", "rest", "gpu_only", "real_only" };
    int unrecorded = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char status[512], word[64];
        chunk_status("put_off", names[i], status, sizeof status);
        unrecorded += !status[0];
        snprintf(word, sizeof word, " %s", names[i]);
        if (strncmp(status, "ok", 2) != 0)
            CHECK(strstr(summary, word), "chunk %s ('%s') is not ok but the summary says: %s",
                  names[i], status, summary);
    }
    CHECK(unrecorded > 0, "every chunk ran within a 1-second budget: nothing put off\n%s", out);
}

TEST(reproduce_resumes_a_stopped_chunk)
{
    static char out[1 << 14];
    /* the rest of the sweep (16 cells of at least 0.1 s) alone, stopped after 1 s */
    int rc = reproduce(out, sizeof out, "stopped", "--chunk rest --budget 1");
    char status[512];
    chunk_status("stopped", "rest", status, sizeof status);
    REQUIRE(rc == 0 && strstr(status, "missing: stopped after"), "rest after --budget 1: '%s'\n%s",
            status, out);
    int cells, keys;
    count_cells("stopped", &cells, &keys);
    CHECK(cells < 16, "the budget did not stop the chunk: %d cells", cells);
    /* every chunk not ok: first, then rest resumed into the same file */
    REQUIRE(reproduce(out, sizeof out, "stopped", "") == 0, "%s", out);
    chunk_status("stopped", "rest", status, sizeof status);
    CHECK(strcmp(status, "ok") == 0, "rest after resuming: '%s'\n%s", status, out);
    count_cells("stopped", &cells, &keys);
    CHECK(cells == 24 && keys == 24, "resumed tiny.h5: %d cells, %d keys; want 24 of each", cells,
          keys);
    static char lines[64];
    run_cmd(lines, sizeof lines, "awk 'END { print NR }' %s/stopped/campaign.tsv", scratch_dir());
    CHECK(atoi(lines) == 5, "campaign.tsv of a resumed chunk: %d lines, want 1 + 4", atoi(lines));
}

TEST(reproduce_refuses_another_binary_and_a_dirty_tree)
{
    static char out[1 << 14];
    char path[600];
    snprintf(path, sizeof path, "%s/other/campaign.tsv", scratch_dir());
    run_cmd(out, sizeof out, "mkdir -p %s/other", scratch_dir());
    FILE *f = fopen(path, "w");
    REQUIRE(f, "cannot write %s", path);
    fprintf(f, "file\tsweep\tcommit\tbinary_sha256\tdevice\tbackend\tstart\tend\tstatus\tchunk\n"
               "tiny.h5\ttiny\t0123456789ab\tfeedbeef\tcpu\tcpu\t-\t-\tok\tfirst\n");
    fclose(f);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s", write_scratch("tiny.lua", tiny_config));
    int rc = run_cmd(out, sizeof out, "TOPKP=%s bash " SCRIPT " --backend cpu --no-paper --allow-dirty --chunks "
                     "%s --out %s/other", topkp_bin(), tiny_chunks(cfg), scratch_dir());
    CHECK(rc == 2 && strstr(out, "another binary") && strstr(out, "0123456789ab (feedbeef)"),
          "a folder of another binary: exit %d, %s", rc, out);
    /* a git tree with a modified tracked file, the script inside it */
    rc = run_cmd(out, sizeof out, "bin=$(realpath %s) && d=%s/repo && mkdir -p $d/scripts && "
                 "cp " SCRIPT " $d/scripts/ && cp %s $d/chunks.tsv && cd $d && git init -q && "
                 "git add . && git -c user.email=t@t -c user.name=t commit -qm x && "
                 "echo '#' >> chunks.tsv && TOPKP=$bin bash scripts/reproduce.sh --backend cpu "
                 "--no-paper --chunks chunks.tsv --out x", topkp_bin(), scratch_dir(),
                 tiny_chunks(cfg));
    CHECK(rc == 2 && strstr(out, "uncommitted changes"), "a dirty tree: exit %d, %s", rc, out);
}

/* A shell command that makes scratch repo `dir` of two commits, leaves its HEAD at the first
 * (`git reset --soft`: the stale .git of a tree copied to a GPU machine) and the files at the
 * second, and a fake binary of the second commit with a bundle SOURCE (scripts/bundle.sh) in
 * dir.bin; then runs `edit` in the repo, and reproduce.sh. */
static int stale_git_run(char *out, size_t n, const char *dir, const char *edit)
{
    return run_cmd(out, n,
                   "d=%s/%s && rm -rf $d $d.bin && mkdir -p $d/scripts $d.bin && cp " SCRIPT
                   " $d/scripts/ && chmod +x $d/scripts/reproduce.sh && cd $d && printf '# none\n' > chunks.tsv && "
                   "echo 1 > a && "
                   "git init -q && git add . && g='git -c user.email=t@t -c user.name=t' && "
                   "$g commit -qm one && echo 2 > a && $g commit -qam two && "
                   "c=$(git rev-parse HEAD) && printf 'commit\t%%s\ntree\t%%s\nclean\tyes\n' "
                   "$c $(git rev-parse 'HEAD^{tree}') > $d.bin/SOURCE && "
                   "printf '#!/bin/sh\necho \"topkp 0 (commit %%s)\"\n' $(echo $c | cut -c1-12) "
                   "> $d.bin/topkp && chmod +x $d.bin/topkp && git reset -q --soft HEAD~1 && %s && "
                   "TOPKP=$d.bin/topkp bash scripts/reproduce.sh --backend cpu --no-paper "
                   "--chunks chunks.tsv --out x",
                   scratch_dir(), dir, edit);
}

/* A tree copied with an older .git is matched to the binary by content, through the bundle's
 * SOURCE (docs/CAMPAIGN.md, "On a GPU machine"), also when the copy lost a file's executable
 * bit; a changed or an added file, a SOURCE of a dirty tree or of another commit, and no SOURCE
 * are refused. */
TEST(reproduce_matches_a_stale_git_tree_to_the_bundle_source)
{
    static char out[1 << 14];
    int rc = stale_git_run(out, sizeof out, "stale_same", "true");
    CHECK(rc == 0 && strstr(out, "the bundle's source"), "same content: exit %d, %s", rc, out);
    rc = stale_git_run(out, sizeof out, "stale_changed", "echo 3 > a");
    CHECK(rc == 2 && strstr(out, "uncommitted changes"), "a changed file: exit %d, %s", rc, out);
    rc = stale_git_run(out, sizeof out, "stale_added", "echo x > new");
    CHECK(rc == 2 && strstr(out, "uncommitted changes"), "an added file: exit %d, %s", rc, out);
    rc = stale_git_run(out, sizeof out, "stale_no_source", "rm ../stale_no_source.bin/SOURCE");
    CHECK(rc == 2, "no SOURCE: exit %d, %s", rc, out);
    rc = stale_git_run(out, sizeof out, "stale_mode", "chmod -x scripts/reproduce.sh");
    CHECK(rc == 0 && strstr(out, "the bundle's source"), "a lost mode: exit %d, %s", rc, out);
    rc = stale_git_run(out, sizeof out, "stale_dirty_source",
                       "sed -i 's/^clean.*/clean\tno/' ../stale_dirty_source.bin/SOURCE");
    CHECK(rc == 2, "a SOURCE of a dirty tree: exit %d, %s", rc, out);
    rc = stale_git_run(out, sizeof out, "stale_other_commit",
                       "sed -i 's/^commit.*/commit\t0123456789abcdef/' ../stale_other_commit.bin/SOURCE");
    CHECK(rc == 2, "a SOURCE of another commit: exit %d, %s", rc, out);
}

TEST(reproduce_workers_run_a_file_as_one_sharded_run)
{
    static char out[1 << 14];
    REQUIRE(reproduce(out, sizeof out, "workers", "--workers 2") == 0, "%s", out);
    char status[512];
    chunk_status("workers", "first", status, sizeof status);
    CHECK(strcmp(status, "ok") == 0, "chunk first: '%s'\n%s", status, out);
    chunk_status("workers", "rest", status, sizeof status);
    CHECK(strcmp(status, "ok; run with chunk first (--workers)") == 0, "chunk rest: '%s'", status);
    int cells, keys;
    count_cells("workers", &cells, &keys);
    CHECK(cells == 24 && keys == 24, "tiny.h5 of 2 workers: %d cells, %d keys; want 24 of each",
          cells, keys);
    static char shards[256];
    run_cmd(shards, sizeof shards, "ls %s/workers/tiny.shard-*.h5 | wc -l", scratch_dir());
    CHECK(atoi(shards) == 2, "%d shard files beside tiny.h5, want 2", atoi(shards));
}

/* SIGTERM to reproduce.sh while a chunk runs (TKP_PAUSE_AT=chunk-running, docs/ROBUSTNESS.md,
 * "Signals"): the script passes it to the chunk's run and ends by it, leaving no temporary and a
 * results file that reads; an immediate second call finds no run holding it and finishes
 * every chunk, each cell once. */
TEST(reproduce_sigterm_ends_the_chunk_and_resumes)
{
    static char out[1 << 14];
    char cfg[600], chunks[600];
    snprintf(cfg, sizeof cfg, "%s", write_scratch("tiny.lua", tiny_config));
    snprintf(chunks, sizeof chunks, "%s", tiny_chunks(cfg));
    int signalled = run_cmd(out, sizeof out, "{ TKP_PAUSE_AT=chunk-running TOPKP=%s "
                            "REAL_GLOB='%s/no-such-*.h5' timeout 120 bash " SCRIPT " --backend cpu "
                            "--no-paper --allow-dirty --chunks %s --out %s/signalled; }",
                            topkp_bin(), scratch_dir(), chunks, scratch_dir());
    CHECK(signalled == 128 + 15, "signalled: want exit %d, got %d: %s", 128 + 15, signalled, out);
    static char left[4096];
    run_cmd(left, sizeof left, "ls -A %s/signalled | grep -E 'partial|tmp' || true",
            scratch_dir());
    CHECK(left[0] == 0, "signalled: temporaries left: %s", left);
    REQUIRE(reproduce(out, sizeof out, "signalled", "") == 0, "the call after the signal: %s",
            out);
    char status[512];
    chunk_status("signalled", "rest", status, sizeof status);
    CHECK(strcmp(status, "ok") == 0, "rest after the signal and a second call: '%s'\n%s", status,
          out);
    int cells, keys;
    count_cells("signalled", &cells, &keys);
    CHECK(cells == 24 && keys == 24, "tiny.h5 after the signal: %d cells, %d keys; want 24 of "
          "each", cells, keys);
}
