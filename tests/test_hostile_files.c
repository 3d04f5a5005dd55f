/* test_hostile_files.c — hostile files and disks (docs/RESULTS.md, "Hostile files and disks";
 * docs/USAGE.md, "A five-minute tour"): outputs that exist or are the input, logits files
 * whose shapes overflow, a disk that fills mid-run, --resume on files of another layout or in
 * use, keys longer than the key column, partial creates, and corrupt results files under
 * `topkp export` and `topkp info`. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "gpu.h"
#include "runner.h"
#include "cli_util.h"
#include "test.h"

static char out[1 << 18];

/* A quick two-algorithm sweep (8 cells on the CPU). */
static const char *quick_config(void)
{
    return write_scratch("hostile-quick.lua",
                         "sweep \"q\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 500,\n"
                         "  batch = { 1, 2 }, k = 7, p = { 0.5, 1.0 },\n"
                         "  timing = { min_reps = 3, max_reps = 3 } }\n");
}

/* A chunked dataset of any declared shape (nothing is allocated until written). */
static void create_dataset(hid_t f, const char *name, hid_t type, int rank, const hsize_t *dims)
{
    hid_t s = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[3] = { 1, 1, 1 };
    H5Pset_chunk(dcpl, rank, chunk);
    hid_t d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
}

/* A logits file with /logits of this rank, shape and type, and a /k of k_rows (0: none). */
static const char *hostile_logits(const char *name, int rank, const hsize_t *dims, hid_t type,
                                  hsize_t k_rows)
{
    static char path[8][512];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 512, "%s/%s", scratch_dir(), name);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    create_dataset(f, "logits", type, rank, dims);
    if (k_rows)
        create_dataset(f, "k", H5T_NATIVE_INT32, 1, &k_rows);
    H5Fclose(f);
    return p;
}

TEST(hostile_files_apply_refuses_to_overwrite)
{
    const char *dir = scratch_dir();
    char in[512], res[512], link[512];
    snprintf(in, sizeof in, "%s/ow-in.h5", dir);
    snprintf(res, sizeof res, "%s/ow-out.h5", dir);
    snprintf(link, sizeof link, "%s/ow-link.h5", dir);
    const char *bin = topkp_bin();
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", bin, in) == 0,
            "gen: %s", out);
    size_t n_in = 0;
    char *in_bytes = slurp(in, &n_in);
    REQUIRE(in_bytes, "cannot read %s", in);
    CHECK(run_cmd(out, sizeof out, "%s gen gaussian --batch 3 --vocab 50 -o %s", bin, in) != 0 &&
              strstr(out, in) && strstr(out, "--force"),
          "gen over an existing file must be refused naming it and --force: %s", out);
    CHECK(same_bytes(in, in_bytes, n_in), "a refused gen changed %s", in);
    REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --k 3", bin, in, res) == 0,
            "apply: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --k 3", bin, in, res) != 0 &&
              strstr(out, res) && strstr(out, "--force"),
          "apply over an existing output must be refused naming it: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --k 3 --force", bin, in,
                  res) == 0, "apply --force must overwrite: %s", out);
    /* The input itself, by its path and through a symbolic link, is never written. */
    CHECK(symlink(in, link) == 0, "symlink");
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --force", bin, in, in) != 0 &&
              strstr(out, "input"), "apply --out = --in must be refused: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --force", bin, in, link) != 0 &&
              strstr(out, link) && strstr(out, "input"),
          "apply --out through a link to the input must be refused: %s", out);
    CHECK(same_bytes(in, in_bytes, n_in), "apply wrote over its input %s", in);
    CHECK(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s --force", bin, in) == 0,
          "gen --force must overwrite: %s", out);
    free(in_bytes);
}

TEST(hostile_files_logits_shape_overflow)
{
    const char *bin = topkp_bin();
    char res[512];
    snprintf(res, sizeof res, "%s/shape-out.h5", scratch_dir());
    struct {
        const char *name, *want;
        int rank;
        hsize_t dims[3], k_rows;
        hid_t type;
    } cases[] = {
        { "huge-rows.h5", "too large", 2, { (1ULL << 62) + 1, 1 }, 0, H5T_NATIVE_FLOAT },
        { "huge-product.h5", "too large", 2, { 1ULL << 20, 1ULL << 20 }, 0, H5T_NATIVE_FLOAT },
        { "huge-vocab.h5", "too large", 2, { 1, 1ULL << 40 }, 0, H5T_NATIVE_FLOAT },
        { "rank3.h5", "2-D", 3, { 2, 3, 4 }, 0, H5T_NATIVE_FLOAT },
        { "strings.h5", "non-numeric", 2, { 2, 3 }, 0, H5T_C_S1 },
        { "long-k.h5", "/k", 2, { 2, 3 }, 5, H5T_NATIVE_FLOAT },
        /* a shape within the limits that the file's storage cannot hold (never written) */
        { "unwritten.h5", "truncated or corrupt", 2, { 1ULL << 14, 1ULL << 14 }, 0,
          H5T_NATIVE_FLOAT },
        { "unwritten-vocab.h5", "truncated or corrupt", 2, { 1, 1ULL << 28 }, 0,
          H5T_NATIVE_UINT16 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = hostile_logits(cases[i].name, cases[i].rank, cases[i].dims,
                                          cases[i].type, cases[i].k_rows);
        int rc = run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --force", bin,
                         path, res);
        CHECK(rc == 1 && strstr(out, path) && strstr(out, cases[i].want),
              "%s: want exit 1 and an error naming the file and '%s', got %d: %s",
              cases[i].name, cases[i].want, rc, out);
    }
    int rc = run_cmd(out, sizeof out, "%s gen gaussian --batch 65536 --vocab 8388608 -o %s/big.h5",
                     bin, scratch_dir());
    CHECK(rc == 1 && strstr(out, "65536") && strstr(out, "8388608"),
          "gen of 65536 x 8388608 must be an error naming both sizes, got %d: %s", rc, out);
}

/* Every ok row's samples lie in /sweeps/q/samples; returns the number of ok rows, -1 when
 * the file does not open, -2 when an ok row has no samples. */
static int ok_rows_with_samples(const char *h5)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return -1;
    int ok = 0;
    if (H5Lexists(f, "sweeps", H5P_DEFAULT) > 0 && H5Lexists(f, "sweeps/q", H5P_DEFAULT) > 0 &&
        H5Lexists(f, "sweeps/q/cells", H5P_DEFAULT) > 0) {
        struct row { char status[16]; int64_t n, off; } *rows;
        hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct row)), st = H5Tcopy(H5T_C_S1);
        H5Tset_size(st, 16);
        H5Tinsert(t, "status", offsetof(struct row, status), st);
        H5Tinsert(t, "n_samples", offsetof(struct row, n), H5T_NATIVE_INT64);
        H5Tinsert(t, "samples_offset", offsetof(struct row, off), H5T_NATIVE_INT64);
        hid_t d = H5Dopen2(f, "sweeps/q/cells", H5P_DEFAULT), s = H5Dget_space(d);
        hssize_t n = H5Sget_simple_extent_npoints(s);
        hid_t ds = H5Dopen2(f, "sweeps/q/samples", H5P_DEFAULT), ss = H5Dget_space(ds);
        hssize_t n_samples = H5Sget_simple_extent_npoints(ss);
        rows = calloc((size_t)n + 1, sizeof *rows);
        double *samples = calloc((size_t)n_samples + 1, sizeof(double));
        if (H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0 ||
            (n_samples > 0 &&
             H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, samples) < 0))
            ok = -1;
        for (hssize_t i = 0; ok >= 0 && i < n; i++) {
            if (strcmp(rows[i].status, "ok") != 0)
                continue;
            if (rows[i].n <= 0 || rows[i].off < 0 || rows[i].off + rows[i].n > n_samples ||
                !(samples[rows[i].off] > 0))
                ok = -2;
            else
                ok++;
        }
        free(samples);
        free(rows);
        H5Sclose(ss), H5Dclose(ds), H5Sclose(s), H5Dclose(d), H5Tclose(st), H5Tclose(t);
    }
    H5Fclose(f);
    return ok;
}

/* A file-size limit (ulimit -f: RLIMIT_FSIZE, SIGXFSZ ignored) stands for a full disk: at
 * every limit the run fails loudly naming the file, and the file keeps every ok row with its
 * samples. */
TEST(hostile_files_full_disk_keeps_every_ok_row)
{
    const char *cfg = write_scratch("hostile-full.lua",
                                    "sweep \"q\" { algos = { \"naive_sort\", \"rtopk\" }, vocab = 300,\n"
                                    "  batch = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,\n"
                                    "            19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34 },\n"
                                    "  k = 7, p = 1.0, timing = { min_reps = 1000, max_reps = 1000, max_seconds = 5 } }\n");
    int partial_runs = 0;
    for (int kib = 320; kib <= 1400; kib += 120) {
        char h5[512];
        snprintf(h5, sizeof h5, "%s/full-%d.h5", scratch_dir(), kib);
        int rc = run_cmd(out, sizeof out, "sh -c 'trap \"\" XFSZ; ulimit -f %d; exec %s run %s -o %s "
                         "--backend cpu'", kib, topkp_bin(), cfg, h5);
        if (rc == 0) /* the whole run fit, so it fits every larger limit too (results files are */
            break;   /* compressed: most limits of this range hold the whole run) */
        CHECK(rc == 1 && strstr(out, h5),
              "limit %d KiB: want exit 1 and an error naming %s, got %d: %.2000s", kib, h5, rc, out);
        int ok = ok_rows_with_samples(h5);
        CHECK(ok >= 0, "limit %d KiB: %s %s after the failure", kib, h5,
              ok == -1 ? "does not open or read" : "has an ok row without its samples");
        CHECK(run_cmd(out, sizeof out, "%s info %s", topkp_bin(), h5) == 0,
              "limit %d KiB: info fails: %.2000s", kib, out);
        partial_runs += ok > 0;
    }
    CHECK(partial_runs > 0, "no limit stopped the run after some cells: the test proves nothing");
}

/* A results file whose cells table has only a key (or `name`) and a status column. */
static void other_layout(const char *path, int with_key)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(f, "/sweeps/q", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    hid_t st = H5Tcopy(H5T_C_S1), kt = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 16);
    H5Tset_size(kt, 400);
    hid_t t = H5Tcreate(H5T_COMPOUND, 416);
    H5Tinsert(t, with_key ? "key" : "name", 0, kt);
    H5Tinsert(t, "status", 400, st);
    hsize_t one = 1;
    hid_t s = H5Screate_simple(1, &one, NULL);
    hid_t d = H5Dcreate2(g, "cells", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    char row[416] = "x";
    memcpy(row + 400, "ok", 3);
    H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, row);
    H5Dclose(d), H5Sclose(s), H5Tclose(t), H5Tclose(kt), H5Tclose(st), H5Gclose(g);
    H5Pclose(lcpl);
    H5Fclose(f);
}

TEST(hostile_files_resume_refuses_other_layouts)
{
    const char *dir = scratch_dir(), *bin = topkp_bin(), *cfg = quick_config();
    char logits[512], nokey[512], fewer[512];
    snprintf(logits, sizeof logits, "%s/rl-logits.h5", dir);
    snprintf(nokey, sizeof nokey, "%s/rl-nokey.h5", dir);
    snprintf(fewer, sizeof fewer, "%s/rl-fewer.h5", dir);
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 500 -o %s", bin, logits) == 0,
            "gen: %s", out);
    other_layout(nokey, 0);
    other_layout(fewer, 1);
    const char *text = write_scratch("rl-text.h5", "not an HDF5 file at all\n");
    const struct {
        const char *path, *want;
    } cases[] = { { logits, "logits" }, { text, "not an HDF5 file" }, { nokey, "no column 'key'" },
                  { fewer, "no column 'algo'" } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = 0;
        char *before = slurp(cases[i].path, &n);
        int rc = run_cmd(out, sizeof out, "%s run %s -o %s --resume --backend cpu", bin, cfg,
                         cases[i].path);
        CHECK(rc == 1 && strstr(out, cases[i].path) && strstr(out, cases[i].want),
              "--resume on %s: want exit 1 naming it and '%s', got %d: %s", cases[i].path,
              cases[i].want, rc, out);
        CHECK(before && same_bytes(cases[i].path, before, n), "--resume wrote into %s",
              cases[i].path);
        free(before);
    }
}

TEST(hostile_files_resume_locks_the_file)
{
    const char *bin = topkp_bin(), *cfg = quick_config();
    char h5[512];
    snprintf(h5, sizeof h5, "%s/locked.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", bin, cfg, h5) == 0, "run: %s",
            out);
    int fd = open(h5, O_RDONLY);
    REQUIRE(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "cannot lock %s", h5);
    size_t n = 0;
    char *before = slurp(h5, &n);
    int rc = run_cmd(out, sizeof out, "%s run %s -o %s --resume --backend cpu", bin, cfg, h5);
    CHECK(rc == 1 && strstr(out, h5) && strstr(out, "in use by another topkp run"),
          "--resume on a locked file: want 'in use by another topkp run', got %d: %s", rc, out);
    CHECK(before && same_bytes(h5, before, n), "--resume wrote into a locked file");
    CHECK(run_cmd(out, sizeof out, "%s export %s", bin, h5) == 1 && strstr(out, "in use"),
          "export of a file in use must say so: %s", out);
    free(before);
    close(fd);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --resume --backend cpu", bin, cfg, h5) == 0 &&
              strstr(out, "already done"), "--resume after the lock is gone: %s", out);
}

TEST(hostile_files_partial_create)
{
    const char *bin = topkp_bin(), *cfg = quick_config();
    char h5[512], empty[512];
    snprintf(h5, sizeof h5, "%s/partial.h5", scratch_dir());
    snprintf(empty, sizeof empty, "%s/partial-empty.h5", scratch_dir());
    /* What a run killed before its first flush leaves: the first 96 bytes of a results file. */
    char whole[512];
    snprintf(whole, sizeof whole, "%s/partial-whole.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", bin, cfg, whole) == 0,
            "run: %s", out);
    size_t n = 0;
    char *bytes = slurp(whole, &n);
    REQUIRE(bytes && n > 96 && write_file(h5, bytes, 96) == 0, "cannot write %s", h5);
    free(bytes);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", bin, cfg, h5) == 0 &&
              strstr(out, "no cells and no run records"),
          "run over a 96-byte partial create must say so and start afresh: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s export %s", bin, h5) == 0, "export: %s", out);
    REQUIRE(write_file(empty, "", 0) == 0, "cannot write %s", empty);
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s --resume --backend cpu", bin, cfg, empty) == 0 &&
              strstr(out, "no cells and no run records"),
          "--resume of an empty file must continue it: %s", out);
    /* A folder that does not exist: the real errno, not a guess. */
    CHECK(run_cmd(out, sizeof out, "%s run %s -o %s/no/such/dir/x.h5 --backend cpu", bin, cfg,
                  scratch_dir()) == 1 && strstr(out, "No such file or directory"),
          "a missing folder must report ENOENT: %s", out);
}

/* --backend gpu without a GPU (CUDA_VISIBLE_DEVICES empty, or no CUDA in this build) fails
 * before the results file is created: through the command line, and through tkp_run itself,
 * whose GPU check comes before tkp_results_open (the command line of a build without CUDA
 * refuses --backend gpu before the runner starts). */
TEST(hostile_files_missing_gpu_creates_no_file)
{
    const char *cfg = quick_config();
    char gpu[512], lib[512];
    snprintf(gpu, sizeof gpu, "%s/no-gpu.h5", scratch_dir());
    snprintf(lib, sizeof lib, "%s/no-gpu-lib.h5", scratch_dir());
    int rc = run_cmd(out, sizeof out, "CUDA_VISIBLE_DEVICES= %s run %s -o %s --backend gpu",
                     topkp_bin(), cfg, gpu);
    CHECK((rc == 1 || rc == 2) && (strstr(out, "usable GPU") || strstr(out, "no CUDA support")),
          "--backend gpu without a GPU: want exit 1 or 2 and a message naming the GPU, got %d: %s",
          rc, out);
    CHECK(access(gpu, F_OK) != 0, "--backend gpu without a GPU left %s behind", gpu);
    if (tkp_gpu_present()) {
        test_skip("a GPU is present: tkp_run --backend gpu would run");
        return;
    }
    struct tkp_run_args args = { .config = cfg, .output = lib, .backend = TKP_GPU,
                                 .device = -1 };
    struct tkp_error err = { { 0 } };
    CHECK(tkp_run(&args, &err) != 0, "tkp_run --backend gpu without a GPU succeeded");
    CHECK(strstr(err.msg, "--backend gpu needs a usable GPU") && strstr(err.msg, lib) &&
              strstr(err.msg, "nothing was written"),
          "tkp_run --backend gpu without a GPU: want a message naming the GPU and %s, got: %s",
          lib, err.msg);
    CHECK(access(lib, F_OK) != 0, "tkp_run --backend gpu without a GPU left %s behind", lib);
}

/* `run`, `gen` and `apply` into a folder they may not write: an error naming the folder and
 * saying it is not writable, and no file (nor .partial) left there. Root ignores a folder's
 * mode (CAP_DAC_OVERRIDE), so as root topkp runs without that capability (setpriv drops it
 * from the bounding set): the mode then applies to root as the folder's owner. */
TEST(hostile_files_read_only_folder_is_named)
{
    const char *bin = topkp_bin(), *cfg = quick_config();
    char ro[512], res[512], logits[512], want[600];
    snprintf(ro, sizeof ro, "%s/read-only", scratch_dir());
    snprintf(logits, sizeof logits, "%s/ro-in.h5", scratch_dir());
    REQUIRE(mkdir(ro, 0555) == 0 && chmod(ro, 0555) == 0, "cannot make %s", ro);
    const char *as = "";
    if (access(ro, W_OK) == 0) /* chmod does not bind this user: root */
        as = "setpriv --bounding-set=-dac_override,-dac_read_search";
    if (run_cmd(out, sizeof out, "%s sh -c 'echo x > %s/probe'", as, ro) == 0) {
        chmod(ro, 0755);
        test_skip("cannot make a folder read-only for this user (setpriv missing or ineffective)");
        return;
    }
    snprintf(want, sizeof want, "its folder %s is not writable", ro);
    snprintf(res, sizeof res, "%s/x.h5", ro);
    CHECK(run_cmd(out, sizeof out, "%s %s run %s -o %s --backend cpu", as, bin, cfg, res) == 1 &&
              strstr(out, res) && strstr(out, want),
          "run into a read-only folder: want exit 1 and '%s', got: %s", want, out);
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", bin, logits) == 0,
            "gen: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s %s gen gaussian --batch 2 --vocab 50 -o %s/g.h5", as, bin,
                  ro) == 1 && strstr(out, want),
          "gen into a read-only folder: want exit 1 and '%s', got: %s", want, out);
    CHECK(run_cmd(out, sizeof out, "%s %s apply naive_sort --in %s --out %s/a.h5 --k 3", as, bin,
                  logits, ro) == 1 && strstr(out, want),
          "apply into a read-only folder: want exit 1 and '%s', got: %s", want, out);
    CHECK(run_cmd(out, sizeof out, "ls -A %s", ro) == 0 && out[0] == 0,
          "the read-only folder holds files afterwards: %s", out);
    chmod(ro, 0755);
}

/* gen and apply write OUT.partial and rename it over OUT; when that rename fails (OUT is a
 * non-empty folder) the error says so and the complete output stays readable in OUT.partial. */
TEST(hostile_files_failed_rename_keeps_the_partial)
{
    const char *bin = topkp_bin();
    char dir[512], logits[512], partial[600], kept[600];
    snprintf(dir, sizeof dir, "%s/rename-dest.h5", scratch_dir());
    snprintf(logits, sizeof logits, "%s/rename-in.h5", scratch_dir());
    REQUIRE(mkdir(dir, 0755) == 0, "cannot make %s", dir);
    REQUIRE(write_file(strcat(strcpy(kept, dir), "/keep.txt"), "x", 1) == 0, "cannot write %s", kept);
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 3 --vocab 60 -o %s", bin, logits) == 0,
            "gen: %s", out);
    snprintf(partial, sizeof partial, "%s.partial", dir);
    const char *cmds[] = { "gen gaussian --batch 2 --vocab 50 -o", "apply naive_sort --k 3 --in" };
    for (int c = 0; c < 2; c++) {
        unlink(partial);
        int rc = c == 0 ? run_cmd(out, sizeof out, "%s %s %s --force", bin, cmds[0], dir)
                        : run_cmd(out, sizeof out, "%s %s %s --out %s --force", bin, cmds[1],
                                  logits, dir);
        CHECK(rc == 1 && strstr(out, "cannot rename") && strstr(out, partial) &&
                  strstr(out, "the complete output is kept in"),
              "%s into a folder: want exit 1 and the kept %s named, got %d: %s", cmds[c], partial,
              rc, out);
        /* the kept output is whole: gen's is a logits file apply reads; apply's has /kept */
        char back[600];
        snprintf(back, sizeof back, "%s/rename-back-%d.h5", scratch_dir(), c);
        int whole = c == 0 ? run_cmd(out, sizeof out, "%s apply naive_sort --k 3 --in %s --out %s",
                                     bin, partial, back) == 0
                           : 0;
        if (c == 1) {
            H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
            hid_t f = H5Fopen(partial, H5F_ACC_RDONLY, H5P_DEFAULT);
            whole = f >= 0 && H5Lexists(f, "kept", H5P_DEFAULT) > 0;
            if (f >= 0)
                H5Fclose(f);
        }
        CHECK(whole, "%s: the kept %s is not a whole output: %s", cmds[c], partial, out);
    }
    CHECK(access(kept, F_OK) == 0, "the folder's file %s is gone", kept);
}

/* Two cells whose identities differ only after character 400 (long variant label and long
 * file dataset paths): both run under distinct keys, and --resume skips exactly the done one. */
TEST(hostile_files_long_keys_do_not_collide)
{
    const char *bin = topkp_bin();
    char dir[512], a[600], b[600], cfg1[4096], cfg2[4096], h5[512];
    snprintf(dir, sizeof dir, "%s/%s/%s", scratch_dir(),
             "long-keys-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    REQUIRE(run_cmd(out, sizeof out, "mkdir -p %s", dir) == 0, "mkdir: %s", out);
    size_t pad = 240 - strlen(dir) - 8;
    REQUIRE(strlen(dir) + 8 < 240, "scratch folder too deep");
    snprintf(a, sizeof a, "%s/%.*s-A.h5", dir, (int)pad,
             "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
             "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
    snprintf(b, sizeof b, "%.*sB.h5", (int)(strlen(a) - 4), a);
    for (const char *p = a; p; p = p == a ? b : NULL)
        REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 300 -o %s", bin, p) == 0,
                "gen %s: %s", p, out);
    const char *label = "a_variant_label_of_sixty_characters_xxxxxxxxxxxxxxxxxxxxxxxx";
    snprintf(cfg1, sizeof cfg1,
             "ablation \"long\" { base = { dataset = { \"file:%s\" }, vocab = 300, batch = 2, k = 5,\n"
             "  timing = { min_reps = 2, max_reps = 2 } }, variants = { %s = \"qrita\" } }\n", a, label);
    snprintf(cfg2, sizeof cfg2,
             "ablation \"long\" { base = { dataset = { \"file:%s\", \"file:%s\" }, vocab = 300,\n"
             "  batch = 2, k = 5, timing = { min_reps = 2, max_reps = 2 } },\n"
             "  variants = { %s = \"qrita\" } }\n", a, b, label);
    const char *c1 = write_scratch("long1.lua", cfg1), *c2 = write_scratch("long2.lua", cfg2);
    snprintf(h5, sizeof h5, "%s/long-keys.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", bin, c1, h5) == 0, "run: %s",
            out);
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --resume --force --backend cpu", bin, c2, h5) == 0,
            "resume: %s", out);
    CHECK(strstr(out, "resume: 1 cell was already done"),
          "--resume must skip exactly the one done cell: %s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", bin, h5) == 0, "export: %s", out);
    int key = tsv_column(out, "key"), dataset = tsv_column(out, "dataset"), rows = 0;
    char keys[2][512] = { "", "" }, sets[2][512] = { "", "" };
    for (char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        if (rows < 2) {
            tsv_field(line + 1, key, keys[rows], sizeof keys[0]);
            tsv_field(line + 1, dataset, sets[rows], sizeof sets[0]);
        }
        rows++;
    }
    CHECK(rows == 2, "want 2 rows (one per file), got %d", rows);
    CHECK(strlen(keys[0]) > 0 && strcmp(keys[0], keys[1]) != 0, "the two cells share key %s",
          keys[0]);
    CHECK(strcmp(sets[0], sets[1]) != 0, "both rows name dataset %s", sets[0]);
}

/* Truncate and flip bytes of a small results file: export, info and run --resume exit 0 or 1
 * (compare against the intact file 0 or 2) with an error naming the file, never crash or hang (under SAN=1, a sanitizer report inside libhdf5 also
 * counts as the library's error). Seeded; the seed and the damage print on failure. */
TEST(hostile_files_corrupt_results_do_not_crash)
{
    const char *bin = topkp_bin();
    char h5[512], bad[512];
    snprintf(h5, sizeof h5, "%s/corrupt-src.h5", scratch_dir());
    snprintf(bad, sizeof bad, "%s/corrupt.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", bin, quick_config(), h5) == 0,
            "run: %s", out);
    size_t n = 0;
    char *good = slurp(h5, &n);
    REQUIRE(good && n > 0, "cannot read %s", h5);
    const unsigned seed = 20261202;
    srand(seed);
    char *copy = malloc(n);
    for (int trial = 0; trial < 60; trial++) {
        size_t at;
        REQUIRE(write_corrupt_copy(bad, good, copy, n, trial, &at) == 0, "cannot write %s", bad);
        for (int c = 0; c < 4; c++) {
            const char *cmd = c == 3 ? "compare" : c == 2 ? "run" : c ? "info" : "export";
            int rc = c == 3 ? run_cmd(out, sizeof out, "{ timeout 60 %s compare %s %s 2>&1 "
                                      ">/dev/null; }", bin, bad, h5)
                     : c == 2 ? run_cmd(out, sizeof out,
                                        "{ timeout 60 %s run %s -o %s --resume --backend cpu 2>&1 "
                                        ">/dev/null; }", bin, quick_config(), bad)
                              : run_cmd(out, sizeof out, "{ timeout 60 %s %s %s 2>&1 >/dev/null; }",
                                        bin, cmd, bad);
            CHECK(rc == 0 ||
                      (rc == 1 && (strstr(out, bad) || libhdf5_sanitizer_report(out))),
                  "seed %u trial %d (%s at %zu): %s exited %d: %.500s", seed, trial,
                  trial % 3 == 0 ? "truncated" : "flipped bytes from", at, cmd, rc, out);
        }
    }
    free(copy);
    free(good);
}

/* Set the extent of dataset `path` in results file h5 to `rows` without writing a chunk: the
 * file then declares rows it does not store (what one flipped bit of a dataspace does).
 * 0 or -1. */
static int declare_unstored_rows(const char *h5, const char *path, hsize_t rows)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(h5, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, path, H5P_DEFAULT);
    int rc = d < 0 || H5Dset_extent(d, &rows) < 0 ? -1 : 0;
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    return rc;
}

/* A results table (cells or samples) whose dataspace declares far more rows than its chunks
 * hold (2^36 and 2^44: a corrupt dimension) is refused by every reader of that table (export
 * and --resume read the cells, compare both) with an error naming the file and the fault, before its length sizes an allocation; never a crash (under SAN=1 an allocation
 * that large aborts). */
TEST(hostile_files_tables_declaring_unstored_rows_are_refused)
{
    const char *bin = topkp_bin();
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s/unstored-src.h5", scratch_dir());
    snprintf(bad, sizeof bad, "%s/unstored.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", bin, quick_config(),
                    good) == 0, "run: %s", out);
    const char *tables[] = { "sweeps/q/cells", "sweeps/q/samples" };
    const hsize_t sizes[] = { 1ULL << 36, 1ULL << 44 };
    for (int t = 0; t < 2; t++)
        for (int z = 0; z < 2; z++) {
            REQUIRE(run_cmd(out, sizeof out, "cp %s %s", good, bad) == 0, "cp: %s", out);
            REQUIRE(declare_unstored_rows(bad, tables[t], sizes[z]) == 0,
                    "cannot grow %s in %s", tables[t], bad);
            const char *cmds[] = { "export", "info", "compare", "run --resume" };
            for (int c = 0; c < 4; c++) {
                int rc = c == 2 ? run_cmd(out, sizeof out, "%s compare %s %s 2>&1", bin, bad, good)
                         : c == 3 ? run_cmd(out, sizeof out, "%s run %s -o %s --resume --backend "
                                            "cpu 2>&1", bin, quick_config(), bad)
                                  : run_cmd(out, sizeof out, "%s %s %s 2>&1", bin, cmds[c], bad);
                const int refused = rc != 0 && strstr(out, bad) && strstr(out, "more rows") &&
                                    !strstr(out, "Sanitizer");
                const int reads_it = c == 2 || (t == 0 && c != 1); /* info reads no table */
                CHECK(refused || (!reads_it && rc == 0),
                      "%s with %llu rows: %s exited %d: %.600s", tables[t],
                      (unsigned long long)sizes[z], cmds[c], rc, out);
            }
        }
}

/* A corrupt logits file (truncated, or bytes flipped) under `apply --in` and as a config's
 * `file` dataset: the reader reads it first in a child process (harness/store/logits_file.c), so
 * libhdf5 crashing or hanging on it is an error naming the file; never a crash of topkp. */
TEST(hostile_files_corrupt_logits_do_not_crash)
{
    const char *bin = topkp_bin();
    char src[512], bad[512], dst[512], cfg_text[1024];
    snprintf(src, sizeof src, "%s/corrupt-logits-src.h5", scratch_dir());
    snprintf(bad, sizeof bad, "%s/corrupt-logits.h5", scratch_dir());
    snprintf(dst, sizeof dst, "%s/corrupt-logits-out.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 4 --vocab 300 --k 5 --p 0.9 -o %s",
                    bin, src) == 0, "gen: %s", out);
    snprintf(cfg_text, sizeof cfg_text,
             "sweep \"s\" { algos = { \"naive_sort\" }, dataset = file \"%s\", vocab = { 300 },\n"
             "  batch = { 2 }, k = { 5 }, timing = { warmup = 0, min_reps = 1, max_reps = 1 } }\n",
             bad);
    const char *cfg = write_scratch("corrupt-logits.lua", cfg_text);
    size_t n = 0;
    char *good = slurp(src, &n);
    REQUIRE(good && n > 0 && cfg, "cannot read %s or write the config", src);
    const unsigned seed = 20261203;
    srand(seed);
    char *copy = malloc(n);
    for (int trial = 0; trial < 40; trial++) {
        size_t at;
        REQUIRE(write_corrupt_copy(bad, good, copy, n, trial, &at) == 0, "cannot write %s", bad);
        for (int c = 0; c < 2; c++) {
            unlink(dst);
            int rc = c == 0 ? run_cmd(out, sizeof out, "{ timeout 60 %s apply naive_sort --in %s "
                                      "--out %s 2>&1 >/dev/null; }", bin, bad, dst)
                            : run_cmd(out, sizeof out, "{ timeout 60 %s run %s -o %s --backend "
                                      "cpu 2>&1; }", bin, cfg, dst);
            /* run: a cell that cannot read its file is an error row naming it, exit 0 or 1 */
            CHECK(rc == 0 || (rc == 1 && (strstr(out, bad) || libhdf5_sanitizer_report(out))),
                  "seed %u trial %d (%s at %zu): %s exited %d: %.500s", seed, trial,
                  trial % 3 == 0 ? "truncated" : "flipped bytes from", at,
                  c ? "run with a file dataset" : "apply --in", rc, out);
        }
    }
    free(copy);
    free(good);
}

/* A results file on which libhdf5 spins the CPU for good (tests/fuzz/findings/README): info,
 * export and compare end well inside the wall-clock guard, by the readers' CPU-time limit
 * (harness/common/read_guard.c), exiting 0 or 1 naming the file (another HDF5 may read it). */
TEST(hostile_files_results_that_spin_libhdf5_end_in_seconds)
{
    const char *bin = topkp_bin(), *bad = "tests/fuzz/findings/results-spin-libhdf5.h5";
    const char *cmds[] = { "info", "export" };
    for (int c = 0; c < 2; c++) {
        const time_t t0 = time(NULL);
        int rc = run_cmd(out, sizeof out, "{ timeout 120 %s %s %s 2>&1 >/dev/null; }", bin,
                         cmds[c], bad);
        const long took = (long)(time(NULL) - t0);
        CHECK(rc == 0 || (rc == 1 && (strstr(out, bad) || libhdf5_sanitizer_report(out))),
              "%s %s: want exit 0, or 1 naming it, got %d: %.400s", cmds[c], bad, rc, out);
        CHECK(took < 60, "%s %s took %ld s (the CPU-time limit is %d s for a file this size)",
              cmds[c], bad, took, 10);
    }
}

/* A logits file on which libhdf5 itself segfaults (tests/fuzz/findings/README): apply and run
 * name it and exit as on any bad file. Read in-process it crashes topkp (exit 139, printed as a
 * note: whether it does depends on the system's HDF5). */
TEST(hostile_files_logits_that_crash_libhdf5_are_an_error)
{
    const char *bin = topkp_bin(), *bad = "tests/fuzz/findings/logits-crash-libhdf5-H5VM_memcpyvv.h5";
    char dst[512];
    snprintf(dst, sizeof dst, "%s/crash-logits-out.h5", scratch_dir());
    int rc = run_cmd(out, sizeof out, "{ timeout 60 %s apply naive_sort --in %s --out %s "
                     "--force 2>&1 >/dev/null; }", bin, bad, dst);
    CHECK(rc == 1 && (strstr(out, bad) || libhdf5_sanitizer_report(out)),
          "apply --in %s: want exit 1 naming it, got %d: %.400s", bad, rc, out);
    CHECK(access(dst, F_OK) != 0, "apply left %s behind", dst);
    rc = run_cmd(out, sizeof out, "{ TKP_GUARDS_IN_PROCESS=1 timeout 60 %s apply naive_sort --in "
                 "%s --out %s --force 2>&1 >/dev/null; }", bin, bad, dst);
    printf("     in-process, the same read exits %d\n", rc);
}
