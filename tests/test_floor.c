/* test_floor.c — the memory floors, floor.read and floor.copy (peers/floor/floor.h;
 * docs/PEERS.md, "Memory floors"): their checksum is the XOR of the logits' 32-bit
 * little-endian words, the last one zero-padded (against a word-by-word loop here); on each
 * backend floor.read leaves words whose XOR is that checksum and floor.copy a byte-for-byte
 * copy, on shapes whose bytes end past the last 16-byte vector (a 16-bit batch of odd V) and on
 * one larger than the GPU's grid reads in one step; in a sweep they run every mode, timed, with
 * nothing judged; scripts/floor-table.py takes a cell's floors from the same run. */
#include <stdlib.h>
#include <string.h>

#include "../peers/floor/floor.h"
#include "apply.h"
#include "cases.h"
#include "cli_util.h"
#include "gpu.h"
#include "test.h"

/* The checksum as floor.h defines it, a word at a time. */
static uint32_t naive_checksum(const unsigned char *b, size_t n)
{
    uint32_t sum = 0;
    for (size_t w = 0; w < (n + 3) / 4; w++) {
        uint32_t word = 0;
        for (size_t j = 0; j < 4 && 4 * w + j < n; j++)
            word |= (uint32_t)b[4 * w + j] << (8 * j);
        sum ^= word;
    }
    return sum;
}

TEST(floor_checksum_is_the_xor_of_little_endian_words)
{
    unsigned char bytes[67];
    uint64_t s = 20261206;
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)case_next_u64(&s);
    for (size_t n = 0; n <= sizeof bytes; n++)
        CHECK(floor_checksum(bytes, n) == naive_checksum(bytes, n),
              "%zu bytes: checksum %08x, want %08x", n, floor_checksum(bytes, n),
              naive_checksum(bytes, n));
}

/* Run floor `name` on `backend` over c's batch; its workspace into *ws (malloc'd, *n bytes). */
static int run_floor(const char *name, enum tkp_backend backend, const struct tkp_batch *b,
                     unsigned char **ws, size_t *n, struct tkp_error *err)
{
    struct tkp_problem pb = tkp_problem_of(b, backend, 0, 0);
    struct tkp_instance in;
    struct tkp_staged st;
    int rc = tkp_instance_open(&in, tkp_algo_find(name), NULL, &pb, err), opened = !rc;
    int staged = !rc && !(rc = tkp_stage(&st, b, backend, NULL, NULL, 0, 1, 0, err));
    if (!rc)
        rc = tkp_instance_run(&in, &st.io, err);
    *n = opened ? in.workspace_bytes : 0;
    *ws = malloc(*n ? *n : 1);
    if (!rc && backend == TKP_GPU)
        rc = tkp_gpu_sync(err) || tkp_gpu_download(*ws, in.workspace, *n, err);
    else if (!rc)
        memcpy(*ws, in.workspace, *n);
    if (staged)
        tkp_staged_release(&st);
    if (opened)
        tkp_instance_close(&in);
    return rc;
}

static void check_floors(enum tkp_backend backend)
{
    const struct {
        int64_t batch, vocab;
        enum tkp_dtype dtype;
    } shapes[] = { { 3, 4097, TKP_BF16 }, { 1, 7, TKP_F16 },   { 2, 4099, TKP_F32 },
                   { 5, 1, TKP_BF16 },    { 64, 151936, TKP_F32 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct test_case c;
        case_gaussian(&c, 100 + i, shapes[i].batch, shapes[i].vocab, 3.0f);
        if (shapes[i].dtype != TKP_F32)
            case_to_dtype(&c, shapes[i].dtype);
        const size_t bytes = (size_t)(c.b.batch * c.b.vocab) * tkp_dtype_size(c.b.dtype);
        const unsigned char *in = tkp_batch_input(&c.b);
        const uint32_t want = naive_checksum(in, bytes);
        struct tkp_error err = { "" };
        unsigned char *ws;
        size_t n;
        int rc = run_floor("floor.read", backend, &c.b, &ws, &n, &err);
        uint32_t got = 0;
        for (size_t w = 0; !rc && w + 4 <= n; w += 4) {
            uint32_t word;
            memcpy(&word, ws + w, 4);
            got ^= word;
        }
        CHECK(!rc && got == want, "floor.read [%lld, %lld] %s: %s checksum %08x, want %08x",
              (long long)c.b.batch, (long long)c.b.vocab, tkp_dtype_name(c.b.dtype), err.msg,
              got, want);
        free(ws);
        rc = run_floor("floor.copy", backend, &c.b, &ws, &n, &err);
        CHECK(!rc && n == bytes && memcmp(ws, in, bytes) == 0,
              "floor.copy [%lld, %lld] %s: %s (%zu bytes, want %zu) not a copy",
              (long long)c.b.batch, (long long)c.b.vocab, tkp_dtype_name(c.b.dtype), err.msg, n,
              bytes);
        free(ws);
        free(c.b.logits), free(c.b.logits16), free(c.b.k), free(c.b.p);
    }
}

TEST(floor_cpu_reads_and_copies_every_byte) { check_floors(TKP_CPU); }

TEST(gpu_floor_reads_and_copies_every_byte)
{
    REQUIRE_GPU();
    check_floors(TKP_GPU);
}

/* In a sweep: every mode (top-k, top-p, both, none, min-p) is a floor's cell, timed, ok, with
 * no row judged; naive_sort beside them still is. */
TEST(floor_cells_are_timed_and_never_judged)
{
    static char out[1 << 15];
    const char *cfg = write_scratch("floors.lua",
        "sweep \"fl\" {\n"
        "  algos = { \"naive_sort\", \"floor.read\", \"floor.copy\" }, dataset = \"gaussian\",\n"
        "  vocab = 999, batch = 2, k = { 0, 5 }, p = { 0.9, 1.0 }, min_p = { 0, 0.1 },\n"
        "  verify = 2, timing = { warmup = 1, min_reps = 2, max_reps = 2 },\n"
        "}\n");
    char h5[512];
    REQUIRE(run_into(cfg, "floors", "", h5, sizeof h5) == 0, "topkp run %s failed", cfg);
    run_cmd(out, sizeof out, "%s export %s | awk -F'\\t' 'NR == 1 { for (i = 1; i <= NF; i++) "
            "c[$i] = i; next } { print $(c[\"algo\"]), $(c[\"status\"]), $(c[\"rows_checked\"]), "
            "($(c[\"median_us\"]) > 0) }' | sort | uniq -c", topkp_bin(), h5);
    CHECK(strstr(out, "8 floor.read ok 0 1") && strstr(out, "8 floor.copy ok 0 1") &&
              strstr(out, "naive_sort ok 2 1"),
          "want 8 timed ok cells of each floor with no row judged, naive_sort judged:\n%s", out);
}

/* scripts/floor-table.py holds each cell to the floors measured in the same file: the `read
 * floor` column is floor.read's median of that (V, B, dtype) and `floors from` says "run"; the
 * floors' own cells are no rows of the table. */
TEST(floor_table_takes_the_floors_of_the_same_run)
{
    static char out[1 << 15];
    const char *cfg = write_scratch("floor_table.lua",
        "local timing = { warmup = 1, min_reps = 2, max_reps = 2 }\n"
        "sweep \"topk50\" { algos = { \"cake\", \"qrita\" }, dataset = \"gaussian\",\n"
        "  vocab = 2000, batch = { 1, 3 }, k = 50, p = 1.0, timing = timing }\n"
        "sweep \"floors\" { algos = { \"floor.read\", \"floor.copy\" }, dataset = \"gaussian\",\n"
        "  vocab = 2000, batch = { 1, 3 }, k = 50, p = 1.0, timing = timing }\n");
    char h5[512], tsv[600];
    snprintf(tsv, sizeof tsv, "%s/floor_table.tsv", scratch_dir());
    REQUIRE(run_into(cfg, "floor_table", "", h5, sizeof h5) == 0, "topkp run %s failed", cfg);
    REQUIRE(run_cmd(out, sizeof out, "%s export %s > %s", topkp_bin(), h5, tsv) == 0, "%s", out);
    char want[2][64];
    for (int b = 0; b < 2; b++) { /* floor.read's median at B = 1 and 3, as the table prints it */
        run_cmd(out, sizeof out, "awk -F'\\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; "
                "next } $(c[\"algo\"]) == \"floor.read\" && $(c[\"batch\"]) == %d { printf "
                "\"%%.1f\", $(c[\"median_us\"]) }' %s", b ? 3 : 1, tsv);
        snprintf(want[b], sizeof want[b], "| %s | run |", out);
    }
    REQUIRE(run_cmd(out, sizeof out, "python3 scripts/floor-table.py %s", tsv) == 0, "%s", out);
    CHECK(strstr(out, "| topk50 | 2000 | 1 | f32 |") && strstr(out, "| topk50 | 2000 | 3 | f32 |"),
          "no row of each topk50 cell:\n%s", out);
    CHECK(!strstr(out, "| floors |"), "the floors' own cells are rows of the table:\n%s", out);
    for (int b = 0; b < 2; b++)
        CHECK(strstr(out, want[b]), "B = %d: the row does not end in floor.read's median '%s':\n%s",
              b ? 3 : 1, want[b], out);
}

/* Target 4 of scripts/floor-table.py (bf16 at least 1.6x faster than float32 at B = 1024): each
 * module timed in both dtypes in one sweep gets a line with both times and their ratio, and
 * the target is checked, not skipped as it is without such cells. */
TEST(floor_table_checks_bf16_against_float32_at_b1024)
{
    static char out[1 << 15];
    const char *cfg = write_scratch("floor_bf16.lua",
        "sweep \"bf16_b1024\" { algos = { \"cake\" }, dataset = \"gaussian\", vocab = 512,\n"
        "  batch = 1024, k = 50, p = 0.9, dtype = { \"f32\", \"bf16\" },\n"
        "  timing = { warmup = 1, min_reps = 2, max_reps = 2 } }\n");
    char h5[512], tsv[600];
    snprintf(tsv, sizeof tsv, "%s/floor_bf16.tsv", scratch_dir());
    REQUIRE(run_into(cfg, "floor_bf16", "", h5, sizeof h5) == 0, "topkp run %s failed", cfg);
    REQUIRE(run_cmd(out, sizeof out, "%s export %s > %s", topkp_bin(), h5, tsv) == 0, "%s", out);
    REQUIRE(run_cmd(out, sizeof out, "python3 scripts/floor-table.py %s", tsv) == 0, "%s", out);
    CHECK(strstr(out, "- bf16_b1024 cake V=512 B=1024: float32 ") && strstr(out, " us, bf16 "),
          "no line comparing cake's float32 and bf16 times:\n%s", out);
    CHECK(strstr(out, "\nTarget 4: ") && !strstr(out, "Target 4: not checked"),
          "target 4 not checked on cells timed in both dtypes:\n%s", out);
}

/* scripts/floor-table.py's `A+B`: two runs of one build are one column, each median the
 * geometric mean of theirs (cake 4x slower in B: twice A's in the table), and target 5 holds
 * that mean against OLD (twice A's: a miss at 2.000). */
TEST(floor_table_averages_the_repeated_runs_of_one_build)
{
    static char out[1 << 15];
    const char *cfg = write_scratch("floor_again.lua",
        "sweep \"topk50\" { algos = { \"cake\" }, dataset = \"gaussian\", vocab = 2000,\n"
        "  batch = 1, k = 50, p = 1.0, timing = { warmup = 1, min_reps = 2, max_reps = 2 } }\n");
    char h5[512], a[600], b[600], want[128];
    snprintf(a, sizeof a, "%s/floor_again_a.tsv", scratch_dir());
    snprintf(b, sizeof b, "%s/floor_again_b.tsv", scratch_dir());
    REQUIRE(run_into(cfg, "floor_again", "", h5, sizeof h5) == 0, "topkp run %s failed", cfg);
    REQUIRE(run_cmd(out, sizeof out, "%s export %s > %s", topkp_bin(), h5, a) == 0, "%s", out);
    REQUIRE(run_cmd(out, sizeof out, "awk -F'\\t' -v OFS='\\t' 'NR == 1 { for (i = 1; i <= NF; "
                    "i++) c[$i] = i; print; next } { $(c[\"median_us\"]) *= 4; print }' %s > %s",
                    a, b) == 0, "%s", out);
    run_cmd(out, sizeof out, "awk -F'\\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } "
            "{ printf \"%%.1f\", 2 * $(c[\"median_us\"]) }' %s", a);
    snprintf(want, sizeof want, "| topk50 | 2000 | 1 | f32 | %s |", out);
    REQUIRE(run_cmd(out, sizeof out, "python3 scripts/floor-table.py %s+%s %s", a, b, a) == 0,
            "%s", out);
    CHECK(strstr(out, want), "cake's column is not the geometric mean '%s':\n%s", want, out);
    CHECK(strstr(out, "\nTarget 5: 1 misses\n- topk50 cake V=2000 B=1: ") &&
              strstr(out, "(2.000)"), "target 5 does not hold the mean against OLD:\n%s", out);
}
